/// How one process spends its connections to PostgreSQL (``PostgresSettings/connections``),
/// each role given its own connection in this order as the budget allows:
///
/// | budget | LISTEN | writer (transactions) | single statements | readers |
/// |---|---|---|---|---|
/// | 1 | none: wake-ups by polling | 1, also every statement and read | on the writer's | on the writer's |
/// | 2 | 1 | 1, also every statement and read | on the writer's | on the writer's |
/// | 3 (default) | 1 | 1 | 1: enqueues, claims, completions | on the writer's |
/// | 4 | 1 | 1 | 2: claims; enqueues and completions | on the writer's |
/// | 5 | 1 | 1 | 3: enqueues; claims; completions | on the writer's |
/// | 6 and more | 1 | 1 | 3 | the rest |
///
/// Why this order: the LISTEN connection is what makes a worker on another machine start a job
/// within milliseconds instead of at its next poll; a connection for single statements lets a
/// worker's claims and completions run from Swift concurrency without a hop to a blocking
/// thread; separate ones let claims overlap completions; readers serve the dashboard and
/// `jobq status` beside the workers. Each connection opens on first use, so a process that
/// never reads opens no reader.
struct ConnectionLayout: Equatable, Sendable {
    /// Whether wake-ups come through a LISTEN connection (otherwise by polling alone).
    let listens: Bool
    /// Connections for statements that commit on their own (0: they run on the writer's).
    let lines: Int
    /// Connections for read transactions (0: reads run on the writer's).
    let readers: Int

    /// The fewest and most connections a process may be given.
    static let allowed = 1...64
    /// What a process uses unless told otherwise: few enough that 30 worker processes fit in
    /// PostgreSQL's default `max_connections` of 100.
    static let defaultBudget = 3

    init(budget: Int) {
        precondition(Self.allowed.contains(budget), "the connection budget is checked where it is read")
        listens = budget >= 2
        lines = min(3, max(0, budget - 2))
        readers = max(0, budget - 5)
    }

    /// The single-statement lines' names, in index order.
    var lineNames: [String] {
        switch lines {
        case 0: []
        case 1: ["statements"]
        case 2: ["enqueues+completions", "claims"]
        default: ["enqueues", "claims", "completions"]
        }
    }

    /// Which line a kind of statement goes on; nil when it goes on the writer's connection.
    func line(for kind: AutocommitLine) -> Int? {
        switch (lines, kind) {
        case (0, _): nil
        case (1, _): 0
        case (2, .claims): 1
        case (2, _): 0
        case (_, .enqueues): 0
        case (_, .claims): 1
        case (_, .completions): 2
        }
    }

    /// Connections this layout opens at most.
    var total: Int { (listens ? 1 : 0) + 1 + lines + readers }
}
