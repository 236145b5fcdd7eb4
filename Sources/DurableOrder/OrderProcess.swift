import Foundation
import JobQ

/// A payment service, as the order process sees it. Each call takes an idempotency key: a step
/// is at least once, and a charge retried with the same key is charged once.
actor Payments {
    private(set) var charged: [String: Int] = [:]
    private(set) var refunded: Set<String> = []

    func charge(_ cents: Int, key: String) -> String {
        if charged[key] == nil { charged[key] = cents }
        return "charge-\(key)"
    }

    func refund(_ charge: String) { refunded.insert(charge) }
}

let payments = Payments()

struct Order: Codable, Sendable {
    var id: Int
    var cents: Int
}

struct Approval: Codable, Sendable {
    var user: String
}

struct Receipt: Codable, Sendable {
    var charge: String
    var approvedBy: String
    var label: String
}

/// Makes a shipping label: an ordinary executor, which the order process calls.
struct ShipLabel: Executor {
    static let name = "ship-label"
    struct Input: Codable, Sendable { var order: Int }
    struct Output: Codable, Sendable { var label: String }
    func run(_ input: Input, context: JobContext) async throws -> Output { Output(label: "LABEL-\(input.order)") }
}

/// The order process: charge, wait a cooling-off period, wait for a person's approval (refund
/// when none comes, or when the order is cancelled), then ship.
struct OrderProcess: Executor {
    static let name = "order-process"
    /// Three days and a week in production; the example shortens them.
    static let coolingOff: Duration = .milliseconds(300)
    static let approvalWindow: Duration = .seconds(30)

    func run(_ order: Order, context: JobContext) async throws -> Receipt {
        let charge = try await context.step("charge") {
            await payments.charge(order.cents, key: "order-\(order.id)")
        }
        do {
            try await context.sleep(for: Self.coolingOff)
            guard
                let approval = try await context.waitForSignal(
                    "approved", as: Approval.self, timeout: Self.approvalWindow)
            else {
                try await context.step("refund") { await payments.refund(charge) }
                throw NonRetryableError("order \(order.id) was not approved in time; refunded")
            }
            let label = try await context.call(ShipLabel.self, .init(order: order.id))
            return Receipt(charge: charge, approvedBy: approval.user, label: label.label)
        } catch let cancelled as FunctionCancelled {
            try await context.step("refund") { await payments.refund(charge) }
            throw cancelled
        }
    }
}
