import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine
import Synchronization

struct CopyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy a whole store into a new one: SQLite into PostgreSQL, or back.",
        discussion: helpText(
            """
            Copies everything: jobs in every state (with their ids, attempts, results, errors,
            progress, partitions and unique holds), the event feed in its order, workflows,
            trees, lanes, batches, tracking sets, schedules with their next occurrence,
            triggers, queue settings (pauses, limits, retention), payload indexes and
            data-migration records. Then it counts and checksums every table on both sides and
            prints the comparison; it exits 0 only when they all match.

            The destination must be empty (a new file, database or schema). Stop the source's
            workers first: the copy refuses while one is live (--allow-live-workers to copy
            anyway). Start workers on the destination once the copy has ended.

            Killed midway, run the same command again: it goes on from where it stopped and
            writes nothing twice.

            Event ids: a SQLite feed keeps its ids, so a follower's cursor carries over. A
            PostgreSQL feed copied to SQLite may be renumbered (SQLite's feed runs in id order);
            the command says so and --event-map FILE writes each renumbered id (source, then
            destination, one pair per line) to translate a saved cursor.

              jobq copy --from jobq.sqlite --to postgres://jobq@db.internal/app
              jobq copy --from postgres://jobq@db.internal/app --to back.sqlite
            """))

    @Option(
        help: ArgumentHelp(
            "The store to copy: an SQLite file or a PostgreSQL URL.",
            discussion: "Default: $JOBQ_DB, else ./jobq.sqlite.",
            valueName: "path-or-url"))
    var from: String?

    @Option(
        help: ArgumentHelp(
            "The store to fill: a new SQLite file or an empty PostgreSQL database.", valueName: "path-or-url"))
    var to: String

    @Flag(
        help:
            "Copy even though workers are live on the source (they may finish jobs the copy has copied as unfinished).")
    var allowLiveWorkers = false

    @Option(
        help: ArgumentHelp(
            "Write the renumbered event ids to this file: \"source destination\" per line.", valueName: "file"))
    var eventMap: String?

    @Option(help: "Rows written per transaction: what a copy killed midway writes again at most.")
    var rowsPerTransaction = 2_000

    func run() async throws {
        guard rowsPerTransaction >= 1 else {
            throw CLIError.usage("--rows-per-transaction must be at least 1, got \(rowsPerTransaction)")
        }
        let sourceText =
            from ?? ProcessInfo.processInfo.environment["JOBQ_DB"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "./jobq.sqlite"
        let source = StoreLocation(sourceText)
        let destination = StoreLocation(to)
        if case .file(let path) = source, !FileManager.default.fileExists(atPath: path) {
            throw CLIError(message: "no store at \(path): name the store to copy with --from", exitCode: .notFound)
        }
        if case .file(let a) = source, case .file(let b) = destination,
            URL(fileURLWithPath: a).standardizedFileURL == URL(fileURLWithPath: b).standardizedFileURL
        {
            throw CLIError.usage("--from and --to name the same file: name a new store with --to")
        }
        let sourceQueue = try await StoreOptions.open(source, migrations: .applyPending, durable: false)
        let destinationQueue = try await StoreOptions.open(destination, migrations: .applyPending, durable: false)
        let output = TerminalOutput.shared
        output.writeLine("copying \(source.description) into \(destination.description)")
        let bar = CopyProgressLine(terminal: output.isTerminal)
        let started = ContinuousClock.now
        let report = try await sourceQueue.copy(
            to: destinationQueue,
            options: StoreCopyOptions(allowLiveWorkers: allowLiveWorkers, rowsPerTransaction: rowsPerTransaction)
        ) { bar.show($0) }
        output.endStatus()
        let elapsed = (ContinuousClock.now - started).inSeconds
        print(Self.table(report))
        let rows = report.tables.reduce(0) { $0 + $1.destinationRows }
        if report.resumed { print("went on with a copy begun earlier") }
        print(Self.eventNote(report.eventIDs))
        if let eventMap { try Self.writeMap(report.eventIDs, to: eventMap) }
        guard report.verified else {
            let differing = report.tables.filter { !$0.matches }.map(\.name).joined(separator: ", ")
            throw CLIError.failure(
                "the copy differs from its source in \(differing): the source changed while it was copied (a worker "
                    + "or a producer?). Stop everything that writes to it, empty the destination and copy again")
        }
        print(String(format: "copied and checked %d rows in %.1fs", rows, elapsed))
    }

    static func table(_ report: StoreCopyReport) -> String {
        var rows = [["table", "source", "destination", "checksum"]]
        for table in report.tables {
            rows.append([
                table.name, String(table.sourceRows), String(table.destinationRows),
                table.matches ? "same (\(table.destinationChecksum.prefix(12)))" : "DIFFERS"
            ])
        }
        return Table.render(rows)
    }

    static func eventNote(_ mapping: EventIDMapping) -> String {
        if mapping.idsKept {
            return "event ids kept: a follower's cursor carries over as it is"
        }
        return "event ids: \(mapping.renumbered.count) renumbered to keep the feed's order; the source's newest event "
            + "\(mapping.newestSource) is \(mapping.newestDestination) here (a follower that had read everything resumes "
            + "with --since \(mapping.newestDestination); --event-map FILE lists every renumbered id)"
    }

    static func writeMap(_ mapping: EventIDMapping, to path: String) throws {
        let text = mapping.renumbered.map { "\($0.source) \($0.destination)\n" }.joined()
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw CLIError.failure("could not write the event map to \(path): \(error.localizedDescription)")
        }
    }
}

/// The copy's progress: a bar redrawn at most ten times a second on a terminal, otherwise a
/// line per table as it is done.
final class CopyProgressLine: Sendable {
    private let terminal: Bool
    private let last = Mutex<(table: String, drawn: ContinuousClock.Instant?)>(("", nil))

    init(terminal: Bool) { self.terminal = terminal }

    func show(_ progress: StoreCopyProgress) {
        let output = TerminalOutput.shared
        let now = ContinuousClock.now
        let done = progress.copied >= progress.total
        let draw = last.withLock { last -> Bool in
            let newTable = last.table != progress.table
            let due = last.drawn.map { now - $0 >= .milliseconds(100) } ?? true
            guard newTable || due || done else { return false }
            last = (progress.table, now)
            return true
        }
        guard draw else { return }
        if terminal {
            let fraction = progress.total > 0 ? min(1, Double(progress.copied) / Double(progress.total)) : 1
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            output.status(
                "\(progress.table.padding(toLength: 18, withPad: " ", startingAt: 0)) [\(bar)] "
                    + "\(progress.copied)/\(progress.total)")
        } else if done {
            output.writeLine("copied \(progress.table): \(progress.copied) rows")
        }
    }
}
