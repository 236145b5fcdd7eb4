import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct IndexCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract: "Indexes on payload members, for filters on them (`jobq list --where '/customer = \"acme\"'`).",
        discussion: """
            Without one, a filter on a payload member reads every job (about a second per \
            million on SQLite); with one it looks the matching jobs up. Each index costs every \
            enqueue one more entry; building one holds the store's writes while it runs.
              jobq index add /customer
              jobq index list
              jobq index remove /customer
            """,
        subcommands: [IndexAddCommand.self, IndexRemoveCommand.self, IndexListCommand.self])
}

struct IndexAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Index a payload member.")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The member, as a JSON pointer: /customer, /account/id.") var pointer: String

    func run() async throws {
        let queue = try await store.open()
        let index = try await queue.addPayloadIndex(pointer)
        print("payload member \(index.pointer) is indexed (since \(isoString(index.createdAt)))")
    }
}

struct IndexRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Drop a payload member's index.")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The member, as given to `jobq index add`.") var pointer: String

    func run() async throws {
        try await store.open().removePayloadIndex(pointer)
        print("payload member \(pointer) is no longer indexed")
    }
}

struct IndexListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "The indexed payload members.")
    @OptionGroup var store: StoreOptions
    @Flag(help: "Print JSON Lines: one index per line.") var json = false

    func run() async throws {
        let indexes = try await store.open().payloadIndexes()
        if json {
            for index in indexes {
                print(#"{"pointer":\#(JSONText.string(index.pointer)),"createdAt":"\#(isoString(index.createdAt))"}"#)
            }
            return
        }
        guard !indexes.isEmpty else {
            print("no payload member is indexed; add one with `jobq index add /customer`")
            return
        }
        print(Table.render([["POINTER", "SINCE"]] + indexes.map { [$0.pointer, isoString($0.createdAt)] }))
    }
}
