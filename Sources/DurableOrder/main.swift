// The DocC article "Durable functions"'s complete example: two orders on a SQLite store, one
// approved and shipped, one cancelled while it waits and refunded. CI runs it.
import Foundation
import JobQ

let path = FileManager.default.temporaryDirectory.appendingPathComponent("orders-\(UUID().uuidString).sqlite").path
let queue = try JobQueue(path: path)
let approved = try await queue.enqueue(OrderProcess.self, Order(id: 1, cents: 4_200))
let cancelled = try await queue.enqueue(OrderProcess.self, Order(id: 2, cents: 990))

var options = WorkerPool.Options()
options.stopWhen = .allJobsFinished
let pool = WorkerPool(
    queue: queue, queues: ["default"], concurrency: 4, executors: [OrderProcess(), ShipLabel()], options: options)
let working = Task { try await pool.run() }

/// Waits until the order's function waits for its approval (it is parked, holding no worker).
func waitingForApproval(_ job: JobID) async throws {
    while try await !queue.functionSteps(of: job).contains(where: { $0.name == "approved" }) {
        try await Task.sleep(for: .milliseconds(20))
    }
}
try await waitingForApproval(approved.id)
try await queue.signal(job: approved.id, name: "approved", payload: Approval(user: "ada"))
try await waitingForApproval(cancelled.id)
_ = try await queue.cancel(cancelled.id)
try await working.value

let receipt = try await queue.result(of: approved.id, as: OrderProcess.self, timeout: .seconds(5))
print("order 1: \(receipt.label), approved by \(receipt.approvedBy)")
let second = try await queue.job(cancelled.id)
print("order 2: \(second?.state.rawValue ?? "?"), refunded: \(await payments.refunded.contains("charge-order-2"))")
for step in try await queue.functionSteps(of: approved.id) {
    print("  \(step.position) \(step.kind.rawValue) \(step.name)")
}
try? FileManager.default.removeItem(atPath: path)
