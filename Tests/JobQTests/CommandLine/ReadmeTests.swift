import Foundation
import JobQ
import Testing

@Suite("README")
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    /// An article of the documentation catalog, as Markdown.
    static func article(_ name: String) throws -> String {
        try String(
            contentsOf: root.appendingPathComponent("Sources/JobQCore/JobQCore.docc/\(name).md"), encoding: .utf8)
    }

    /// README stays a page a newcomer reads: what jobq is, the two commands, a quickstart and
    /// the way into the catalog, whose articles it links all exist.
    @Test func readmeIsShortAndItsArticleLinksResolve() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 300)
        let links = readme.matches(of: /\]\((Sources\/JobQCore\/JobQCore\.docc\/[A-Za-z]+\.md)\)/).map { String($0.1) }
        #expect(links.count >= 10)
        for link in links {
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(link).path), "\(link)")
        }
    }

    /// The article "Inside your app" shows code that compiles: each of its Swift blocks is in
    /// the InsideYourApp target's files, which the build compiles.
    @Test func insideYourAppExamplesAreCompiled() throws {
        let article = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/JobQCore/JobQCore.docc/InsideYourApp.md"),
            encoding: .utf8)
        let folder = Self.root.appendingPathComponent("Sources/InsideYourApp")
        let compiled = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().map {
            try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)
        }.joined(separator: "\n")
        let blocks = article.components(separatedBy: "```swift\n").dropFirst().map {
            String($0.prefix { _ in true }.components(separatedBy: "```")[0])
        }
        #expect(blocks.count == 2)
        for block in blocks { #expect(compiled.contains(block), "not compiled as written:\n\(block)") }
    }

    /// The article "Durable functions" shows code that compiles and runs: each of its Swift blocks
    /// but the last (a fragment about deploys) is in the DurableOrder target's files, and the
    /// built example runs to its end: one order shipped, one cancelled and refunded.
    @Test func durableFunctionsExampleCompilesAndRuns() async throws {
        let article = try Self.article("DurableFunctions")
        let folder = Self.root.appendingPathComponent("Sources/DurableOrder")
        let compiled = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().map {
            try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)
        }.joined(separator: "\n")
        let blocks = article.components(separatedBy: "```swift\n").dropFirst().map {
            String($0.components(separatedBy: "```")[0])
        }
        #expect(blocks.count == 3)
        for block in blocks.dropLast() { #expect(compiled.contains(block), "not compiled as written:\n\(block)") }
        let example = CLI.binary.deletingLastPathComponent().appendingPathComponent("DurableOrder")
        try #require(
            FileManager.default.isExecutableFile(atPath: example.path), "build the DurableOrder target first")
        // Its output goes to a file and its exit is awaited: a pipe read here would block a thread
        // of the test pool until every process holding the pipe's end exits, and a `jobq work`
        // that another test spawns at the same moment can inherit it.
        let result = try await CLI.run([], db: nil, executable: example)
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.stdout
        #expect(text.contains("order 1: LABEL-1, approved by ada"), "\(text)")
        #expect(text.contains("order 2: cancelled, refunded: true"), "\(text)")
    }

    @Test func quickstartInReadmeIsTheCompiledQuickstart() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/Quickstart/main.swift"), encoding: .utf8)
        #expect(
            readme.contains("```swift\n" + source + "```"),
            "README's Swift block must equal Sources/Quickstart/main.swift")
    }

    @Test func readmeStartsWithTheDemoAndTestCommands() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).prefix(6).map(String.init)
        #expect(
            lines == ["# jobq", "", "```sh", "swift run jobq demo", "swift test --traits Postgres,Dashboard", "```"])
        let ci = try String(contentsOf: Self.root.appendingPathComponent(".ci/run"), encoding: .utf8)
        // The command itself, its output kept for the failure summary (`... 2>&1 | tee FILE`).
        let command = "swift test --traits Postgres,Dashboard"
        #expect(
            ci.split(separator: "\n").contains { $0 == command || $0.hasPrefix(command + " 2>&1 | tee ") },
            ".ci/run runs README's test command")
    }

    /// The workflow file README shows runs as it says: its steps one after another around the
    /// three parallel ones, and the last one receives the previous result.
    @Test func readmesTreeFileRuns() async throws {
        let readme = try Self.article("JobTrees")
        let start = try #require(readme.range(of: "or a workflow\nof its own:\n\n```json\n"))
        let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        // README's ingredient node gets `with`: its input is {"input": id, "api": ...}.
        struct Ingredient: Executor {
            static let name = "ingredient"
            struct Input: Codable, Sendable {
                var input: String
                var api: String
            }
            func run(_ input: Input, context: JobContext) async throws -> Cookbook.Ingredient.Output {
                try await Cookbook.Ingredient().run(input.input + "@" + input.api, context: context)
            }
        }
        let executors: [any Executor] = [Cookbook.Book(), Cookbook.Recipe(), Ingredient(), Cookbook.Image()]
        let queue = try JobQueue.inMemory()
        let id = try await queue.submit(
            try Workflow(
                json: String(readme[start.upperBound..<end.lowerBound]),
                knownExecutors: Set(executors.map { type(of: $0).name })))
        try await work(queue, executors: executors)
        let status = try #require(try await queue.workflow(id))
        #expect(status.name == "cookbook")
        #expect(status.state == .succeeded)
        #expect(status.jobs.filter { $0.name == "ingredient" }.count == 9)
        #expect(
            status.jobs.first { $0.name == "ingredient" }?.payloadJSON
                == #"{"input":"r1-ing1","api":"https://example.com"}"#)
    }

    @Test func readmesWorkflowFileRuns() async throws {
        let readme = try Self.article("Workflows")
        let start = try #require(readme.range(of: "MGCommand's example, as a file:\n\n```json\n"))
        let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        // One second per sleep in README; a hundredth here.
        let file = readme[start.upperBound..<end.lowerBound].replacingOccurrences(
            of: #""seconds": 1}"#, with: #""seconds": 0.01}"#)
        let queue = try JobQueue.inMemory()
        let id = try await queue.submit(try Workflow(json: file, knownExecutors: Set(BuiltinExecutors.names)))
        try await work(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        #expect(status.jobs.count == 12)
        #expect(status.context == ["user": "ada"])
        #expect(status.jobs.last?.resultJSON == #"{"previous":{"slept":0.01},"print":"Finished"}"#)
    }
}
