// swift-tools-version: 6.1
import Foundation
import PackageDescription

// JOBQ_FUZZ=1 (scripts/fuzz.sh) builds jobq-fuzz as a libFuzzer target, with jobq's library
// instrumented for coverage. Normal builds never see these flags.
let fuzzing = ProcessInfo.processInfo.environment["JOBQ_FUZZ"] == "1"
let fuzzInstrumentation: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer"])] : []

let package = Package(
    name: "jobq",
    platforms: [.macOS(.v15)],
    products: [
        // The queue on its default store, SQLite (`import JobQ`).
        .library(name: "JobQ", targets: ["JobQ"]),
        // The PostgreSQL store, for workers on many machines. Its own product, so that an
        // embedder who only wants SQLite (and `swift run jobq`) never builds postgres-nio.
        .library(name: "JobQPostgres", targets: ["JobQPostgres"]),
        // The web dashboard and the Prometheus `/metrics` endpoint (Hummingbird), to mount in
        // an app of your own or to run with `jobq dashboard` / `jobq work --metrics-listen`.
        .library(name: "JobQDashboard", targets: ["JobQDashboard"]),
        .executable(name: "jobq", targets: ["JobQCLI"]),
        .executable(name: "jobq-bench", targets: ["jobq-bench"])
    ],
    traits: [
        // `--traits Postgres` gives the `jobq` binary `--db postgres://...`. Off by default, so
        // that `swift run jobq demo` never builds postgres-nio.
        .trait(name: "Postgres", description: "The jobq command line opens PostgreSQL stores (builds postgres-nio)."),
        // `--traits Dashboard` gives the `jobq` binary `jobq dashboard` and
        // `jobq work --metrics-listen`. Off by default for the same reason.
        .trait(
            name: "Dashboard",
            description: "The jobq command line serves the web dashboard and /metrics (builds Hummingbird).")
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // `swift package generate-documentation --target JobQCore`: the DocC catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")
    ],
    targets: [
        // Turns the numbered SQL files in Migrations/ into Swift source at build time,
        // so the schema is compiled into the binary and never looked up on disk at run time.
        .executableTarget(name: "MigrationEmbedder"),
        .plugin(
            name: "EmbedMigrations",
            capability: .buildTool(),
            dependencies: ["MigrationEmbedder"]
        ),
        // The core: model, rules, worker, workflows, schedules and the store interface. It
        // imports neither GRDB nor postgres-nio; each store is its own module.
        .target(
            name: "JobQCore",
            dependencies: [
                "CProcessControl",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // Counters and timings to any backend; spans that continue the enqueuer's
                // trace. Both are API-only packages: free until a backend is bootstrapped.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing")
            ],
            swiftSettings: fuzzInstrumentation
        ),
        // The rules both stores share, written in SQL (what a claim, a success, a failure, a
        // cancellation do to dependents, groups, trees, lanes, batches), over a small
        // transaction interface each store implements. Neither GRDB nor postgres-nio.
        .target(
            name: "JobQSQL",
            dependencies: ["JobQCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: fuzzInstrumentation
        ),
        // The SQLite store: its connections, transactions, schema migrations and change watcher.
        .target(
            name: "JobQSQLite",
            dependencies: [
                "JobQCore",
                "JobQSQL",
                .product(name: "GRDB", package: "GRDB.swift"),
                // The hot path (claims, completions, inserts, events) binds and steps GRDB's
                // cached statements through the C API.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                "CSQLiteTuning",
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: fuzzInstrumentation,
            plugins: ["EmbedMigrations"]
        ),
        // What `import JobQ` brings: the core and the SQLite store that `JobQueue(path:)` opens.
        .target(name: "JobQ", dependencies: ["JobQCore", "JobQSQLite"]),
        .target(
            name: "JobQPostgres",
            dependencies: [
                "JobQCore",
                "JobQSQL",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log")
            ],
            plugins: ["EmbedMigrations"]
        ),
        // What the dashboard does with outside text (HTML escaping, JSON for reading, form
        // bodies, Host names), apart from Hummingbird so that the fuzzer builds it alone.
        .target(name: "JobQWebText", swiftSettings: fuzzInstrumentation),
        .target(
            name: "JobQDashboard",
            dependencies: [
                "JobQCore",
                "JobQWebText",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // SocketAddress: the peer a loopback-only dashboard checks.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]
        ),
        // The SQLite settings that need C (sqlite3_config is variadic), for
        // `JobQueue.tuneSQLiteBeforeFirstUse()`.
        // pipe2 and prctl, which Swift's Glibc module leaves out: close-on-exec pipes for shell
        // jobs' output, and adopting their orphaned processes.
        .target(name: "CProcessControl"),
        .target(
            name: "CSQLiteTuning",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        // What jobq's command-line tools share: exit codes and errors, help text, store
        // locations, tables.
        .target(
            name: "JobQCommandLine",
            dependencies: ["JobQCore", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // A TCP relay that delays every packet, or holds them all: a server across a network,
        // for the bench and the tests of the client's deadline.
        .target(name: "LatencyRelay"),
        // `jobq-bench`: jobq beside minimal raw queues on this machine. Not part of the `jobq`
        // binary; it runs the `jobq` built next to it for its cross-process workloads.
        .executableTarget(
            name: "jobq-bench",
            dependencies: [
                "JobQ",
                // The raw baselines run jobq's own statements (the event outbox's counters).
                "JobQSQL",
                "JobQCommandLine",
                "LatencyRelay",
                .target(name: "JobQPostgres", condition: .when(traits: ["Postgres"])),
                // The row of an enqueue through the HTTP API serves it in-process.
                .target(name: "JobQDashboard", condition: .when(traits: ["Dashboard"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The raw baselines use the SQLite C API directly; the application's transaction
                // row uses GRDB, as an application would.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        .executableTarget(
            name: "JobQCLI",
            dependencies: [
                "JobQ",
                "JobQCommandLine",
                .target(name: "JobQPostgres", condition: .when(traits: ["Postgres"])),
                .target(name: "JobQDashboard", condition: .when(traits: ["Dashboard"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]
        ),
        // README's library quickstart, compiled as written (a test checks the two agree).
        .executableTarget(
            name: "Quickstart",
            dependencies: [
                "JobQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]
        ),
        // The DocC article "Inside your app"'s examples, compiled as written (a test checks the
        // article's Swift blocks are in these files).
        .executableTarget(
            name: "InsideYourApp",
            dependencies: [
                "JobQ", "JobQPostgres", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log")
            ]
        ),
        // The DocC article "Durable functions"'s complete example, compiled as written and run by
        // a test.
        .executableTarget(name: "DurableOrder", dependencies: ["JobQ"]),
        // A program the tests run as a process (kill -9 in the middle of a data migration).
        .executableTarget(
            name: "jobq-test-helper",
            dependencies: [
                "JobQ", "JobQPostgres", .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "PostgresNIO", package: "postgres-nio")
            ],
            path: "Tests/Helpers/TestHelper"
        ),
        // The chaos run (issue: reliability under faults): workers killed at random while
        // producers enqueue; checks nothing is lost or done twice. `swift run -c release jobq-chaos`.
        .executableTarget(
            name: "jobq-chaos",
            dependencies: [
                "JobQ", "JobQPostgres", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log")
            ],
            path: "Tests/Helpers/Chaos"
        ),
        // Fuzzing the parsers of outside text; replays Tests/Fuzz/corpus when built normally.
        // scripts/fuzz.sh builds it with -sanitize=fuzzer.
        .executableTarget(
            name: "jobq-fuzz",
            // The parsers live in the core: the fuzzer builds neither GRDB nor a store.
            dependencies: ["JobQCore", "JobQWebText"],
            path: "Tests/Helpers/Fuzz",
            swiftSettings: fuzzing
                ? fuzzInstrumentation + [.define("FUZZING"), .unsafeFlags(["-parse-as-library"])] : [],
            linkerSettings: fuzzing ? [.unsafeFlags(["-sanitize=fuzzer"])] : []
        ),
        // Tests that need a PostgreSQL server (.ci/run starts one; see README's development
        // section). They say so in the output when there is none.
        .testTarget(
            name: "JobQTests",
            dependencies: [
                "JobQ",
                "JobQCore",
                "JobQSQL",
                "JobQSQLite",
                "JobQPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                "JobQDashboard",
                "JobQWebText",
                "JobQCLI",
                "jobq-bench",
                "LatencyRelay",
                "jobq-test-helper",
                "jobq-chaos",
                "jobq-fuzz",
                "DurableOrder",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
