import JobQ
import Logging
import ServiceLifecycle

struct Sum: Executor {
    static let name = "sum"
    struct Input: Codable, Sendable {
        var a: Int
        var b: Int
    }
    struct Output: Codable, Sendable { var sum: Int }

    func run(_ input: Input, context: JobContext) async throws -> Output {
        Output(sum: input.a + input.b)
    }
}

let queue = try JobQueue(path: "quickstart.sqlite")
let job = try await queue.enqueue(Sum.self, .init(a: 1, b: 2), options: .init(priority: 5))

var options = WorkerPool.Options()
options.stopWhen = .queuesEmpty  // a server keeps the default, .never, and runs until SIGTERM
let pool = WorkerPool(queue: queue, queues: ["default"], concurrency: 4, executors: [Sum()], options: options)
let group = ServiceGroup(
    configuration: .init(
        // The pool returning on its own (stopWhen) shuts the group down instead of failing it.
        services: [.init(service: pool, successTerminationBehavior: .gracefullyShutdownGroup)],
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: Logger(label: "quickstart")))
try await group.run()

let done = try await queue.job(job.id)!
print(done.state, try done.result(as: Sum.Output.self)!.sum)  // succeeded 3
