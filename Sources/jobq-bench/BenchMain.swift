import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

/// `jobq-bench`: measures jobq on this machine beside minimal raw queues. Its own executable,
/// so that the `jobq` users ship carries no bench; its cross-process workloads run the `jobq`
/// built next to it.
@main
enum BenchMain {
    static func main() async {
        JobQueue.tuneSQLiteBeforeFirstUse()
        do {
            var command = try BenchCommand.parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(ExitStatus.report(error, of: BenchCommand.self))
        }
    }
}
