import Foundation
import JobQ
import Logging
import Testing

@testable import JobQPostgres

/// Reading where the server is and how to log in, as libpq does; no server needed.
@Suite("PostgreSQL settings")
struct PostgresSettingsTests {
    @Test func aURLGivesEveryPart() throws {
        let settings = try PostgresSettings(
            url: "postgres://jobq:s3cret@db.internal:6543/jobs?sslmode=verify-full", environment: [:])
        #expect(
            settings.host == "db.internal" && settings.port == 6543 && settings.username == "jobq"
                && settings.database == "jobs")
        #expect(settings.tls == .verifyFull && settings.password == "s3cret")
        #expect(settings.description == "postgres://jobq@db.internal:6543/jobs?sslmode=verify-full")
        #expect(!String(reflecting: settings).contains("s3cret") && !"\(settings)".contains("s3cret"))
    }

    /// Every session's bounds: defaults, each settable in the URL (a bare number is in
    /// milliseconds for PostgreSQL's timeouts and in seconds for libpq's), 0 turns a server
    /// bound off, and the URL's description keeps what differs from the defaults.
    @Test func timeoutsHaveDefaultsAndComeFromTheURL() throws {
        let standard = try PostgresSettings(url: "postgres://me@h/db", environment: [:]).timeouts
        #expect(standard.statement == .seconds(60) && standard.lock == .seconds(10))
        #expect(standard.idleInTransaction == .seconds(5) && standard.connect == .seconds(10))
        #expect(standard.keepalivesIdle == .seconds(30) && standard.keepalivesInterval == .seconds(10))
        #expect(standard.keepalivesCount == 3)
        #expect(standard.clientDeadline == .seconds(65))
        let given = try PostgresSettings(
            url: "postgres://me@h/db?statement_timeout=2m&lock_timeout=1500&idle_in_transaction_session_timeout=5s"
                + "&connect_timeout=3&keepalives_idle=20&keepalives_interval=5s&keepalives_count=4",
            environment: [:])
        let timeouts = given.timeouts
        #expect(timeouts.statement == .seconds(120) && timeouts.lock == .milliseconds(1500))
        #expect(timeouts.idleInTransaction == .seconds(5) && timeouts.connect == .seconds(3))
        #expect(timeouts.keepalivesIdle == .seconds(20) && timeouts.keepalivesInterval == .seconds(5))
        #expect(timeouts.keepalivesCount == 4)
        let parameters = Dictionary(uniqueKeysWithValues: timeouts.startupParameters)
        #expect(parameters["statement_timeout"] == "120000" && parameters["lock_timeout"] == "1500")
        #expect(parameters["idle_in_transaction_session_timeout"] == "5000")
        #expect(parameters["tcp_keepalives_idle"] == "20" && parameters["tcp_keepalives_count"] == "4")
        let again = try PostgresSettings(url: given.description, environment: [:])
        #expect(again.timeouts == timeouts, "\(given.description)")
        let off = try PostgresSettings(url: "postgres://me@h/db?statement_timeout=0", environment: [:])
        #expect(off.timeouts.statement == .zero && off.timeouts.clientDeadline == nil)
        #expect(off.description == "postgres://me@h:5432/db?statement_timeout=0ms")
    }

    /// Prepared statements are on unless the URL says `prepare=off`; anything else is refused
    /// with what to write instead.
    @Test func preparedStatementsAreOnUnlessTheURLTurnsThemOff() throws {
        #expect(try PostgresSettings(url: "postgres://me@h/db", environment: [:]).preparesStatements)
        let off = try PostgresSettings(url: "postgres://me@h/db?prepare=off", environment: [:])
        #expect(!off.preparesStatements && off.description == "postgres://me@h:5432/db?prepare=off")
        #expect(try PostgresSettings(url: off.description, environment: [:]) == off)
        #expect(try PostgresSettings(url: "postgres://me@h/db?prepare=on", environment: [:]).preparesStatements)
        #expect {
            try PostgresSettings(url: "postgres://me@h/db?prepare=no", environment: [:])
        } throws: { error in
            "\(error)".contains("prepare=no") && "\(error)".contains("on or off")
        }
    }

    /// A process opens 3 connections unless the URL says `connections=N` (1 to 64), spent as
    /// ``ConnectionLayout`` says; a value out of range is refused with the range.
    @Test func theConnectionBudgetIsThreeUnlessTheURLSaysOtherwise() throws {
        let standard = try PostgresSettings(url: "postgres://me@h/db", environment: [:])
        #expect(standard.connections == 3 && standard.description == "postgres://me@h:5432/db")
        let two = try PostgresSettings(url: "postgres://me@h/db?connections=2", environment: [:])
        #expect(two.connections == 2 && two.description == "postgres://me@h:5432/db?connections=2")
        #expect(try PostgresSettings(url: two.description, environment: [:]) == two)
        for value in ["0", "65", "-1", "three", ""] {
            #expect {
                try PostgresSettings(url: "postgres://me@h/db?connections=\(value)", environment: [:])
            } throws: { error in
                "\(error)".contains("connections=\(value)") && "\(error)".contains("1 to 64")
            }
        }
        let layouts = (1...8).map { ConnectionLayout(budget: $0) }
        #expect(layouts.map(\.total) == Array(1...8), "a layout opens at most its budget")
        #expect(layouts.map(\.listens) == [false] + Array(repeating: true, count: 7))
        #expect(layouts.map(\.lines) == [0, 0, 1, 2, 3, 3, 3, 3])
        #expect(layouts.map(\.readers) == [0, 0, 0, 0, 0, 1, 2, 3])
    }

    /// `listen_host`/`listen_port` send the LISTEN connection elsewhere (around a pooler), with
    /// the same user and database; the rest of the settings keep the pooler's address.
    @Test func theListenConnectionMayGoToAnotherAddress() throws {
        let settings = try PostgresSettings(
            url: "postgres://me@pooler:6432/db?prepare=off&listen_host=db.internal&listen_port=5432", environment: [:])
        #expect(settings.host == "pooler" && settings.port == 6432)
        #expect(settings.listenHost == "db.internal" && settings.listenPort == 5432)
        let listening = settings.forListening
        #expect(listening.host == "db.internal" && listening.port == 5432 && listening.database == "db")
        #expect(try PostgresSettings(url: settings.description, environment: [:]) == settings)
        let plain = try PostgresSettings(url: "postgres://me@h/db", environment: [:]).forListening
        #expect(plain.host == "h" && plain.port == 5432)
        for (value, message) in [
            ("listen_host=", "listen_host"), ("listen_port=0", "listen_port=0"), ("listen_port=x", "listen_port=x")
        ] {
            #expect {
                try PostgresSettings(url: "postgres://me@h/db?\(value)", environment: [:])
            } throws: { error in
                "\(error)".contains(message)
            }
        }
    }

    /// jobq's connections show as `jobq` in `pg_stat_activity` unless the URL names another
    /// application; a name PostgreSQL would cut or mangle is refused.
    @Test func connectionsAreNamedJobqUnlessTheURLNamesAnother() throws {
        #expect(try PostgresSettings(url: "postgres://me@h/db", environment: [:]).applicationName == "jobq")
        let named = try PostgresSettings(url: "postgres://me@h/db?application_name=billing-worker", environment: [:])
        #expect(named.applicationName == "billing-worker")
        #expect(named.description == "postgres://me@h:5432/db?application_name=billing-worker")
        for value in ["", String(repeating: "a", count: 64), "caf%C3%A9", "a%0Ab"] {
            #expect {
                try PostgresSettings(url: "postgres://me@h/db?application_name=\(value)", environment: [:])
            } throws: { error in
                "\(error)".contains("application_name=") && "\(error)".contains("printable ASCII")
            }
        }
    }

    /// jobq's tables live in a schema of their own: `jobq` unless the URL names another, kept
    /// as given (quoted) and refused when PostgreSQL would not keep it.
    @Test func theSchemaIsJobqUnlessTheURLNamesAnother() throws {
        let standard = try PostgresSettings(url: "postgres://me@h/db", environment: [:])
        #expect(standard.schema == "jobq" && standard.description == "postgres://me@h:5432/db")
        let named = try PostgresSettings(url: "postgres://me@h/db?schema=Billing%20Jobs", environment: [:])
        #expect(named.schema == "Billing Jobs")
        #expect(named.description == "postgres://me@h:5432/db?schema=Billing%20Jobs")
        #expect(named.schemaNames.qualified("SELECT * FROM jobq_jobs") == #"SELECT * FROM "Billing Jobs".jobs"#)
        let quoted = try PostgresSettings(url: #"postgres://me@h/db?schema=a%22b"#, environment: [:])
        #expect(quoted.schemaNames.table("jobs") == #""a""b".jobs"#)
        for (value, message) in [
            ("", "1 to 63 bytes"), (String(repeating: "s", count: 64), "1 to 63 bytes"),
            ("pg_jobs", "start with pg_"), ("a%0Ab", "control characters")
        ] {
            #expect {
                _ = try PostgresSettings(url: "postgres://me@h/db?schema=\(value)", environment: [:])
            } throws: { error in
                guard case JobQueueError.invalidInput(let text) = error else { return false }
                return text.contains(message)
            }
        }
    }

    /// The names jobq's SQL writes become the schema's tables; values, columns named like a
    /// table, comments and parameters stay as they are.
    @Test func statementsNameTheSchemasTables() {
        let names = SchemaNames.shared("jobq")
        #expect(
            names.qualified(
                """
                UPDATE jobq_trees SET jobs = jobs + $1 FROM jobq_jobs -- jobq_jobs here stays
                WHERE jobq_jobs.id = $2 AND pg_notify('jobq_events', 'jobq_jobs') IS NOT NULL
                """)
                    == """
                    UPDATE "jobq".trees SET jobs = jobs + $1 FROM "jobq".jobs -- jobq_jobs here stays
                    WHERE jobs.id = $2 AND pg_notify('jobq_events', 'jobq_jobs') IS NOT NULL
                    """)
        #expect(
            SchemaNames.unqualified("SELECT 1 FROM jobq_jobs, jobq_record_successes()")
                == "SELECT 1 FROM jobs, jobq_record_successes()")
        #expect(
            names.qualified("SELECT jobq_record_successes(), jobq_nothing")
                == #"SELECT "jobq".jobq_record_successes(), jobq_nothing"#)
    }

    @Test func defaultsArePort5432AndTLSIfOffered() throws {
        let settings = try PostgresSettings(url: "postgresql://me@localhost/db", environment: [:])
        #expect(settings.port == 5432 && settings.tls == .prefer && !settings.hasPassword)
        #expect(try PostgresSettings(url: "postgres://me@h/db?sslmode=allow", environment: [:]).tls == .prefer)
        #expect(try PostgresSettings(url: "postgres://me@h/db?sslmode=disable", environment: [:]).tls == .disable)
        #expect(try PostgresSettings(url: "postgres://me@h/db?sslmode=require", environment: [:]).tls == .require)
    }

    @Test(arguments: [
        ("mysql://me@h/db", "is not a PostgreSQL URL"),
        ("postgres:///db", "names no host"),
        ("postgres://h/db", "names no user"),
        ("postgres://me@h", "names no database"),
        ("postgres://me@h/db?sslmode=always", "sslmode=always"),
        ("postgres://me@h/db?fallback_application_name=x", "'fallback_application_name' is not supported"),
        ("postgres://me@h/db?statement_timeout=soon", "statement_timeout=soon in the PostgreSQL URL is not a duration"),
        ("postgres://me@h/db?lock_timeout=-5", "lock_timeout=-5 in the PostgreSQL URL is not a duration"),
        ("postgres://me@h/db?idle_in_transaction_session_timeout=2d", "is longer than a day"),
        ("postgres://me@h/db?connect_timeout=0", "connect_timeout=0 in the PostgreSQL URL must be more than zero"),
        (
            "postgres://me@h/db?keepalives_idle=1.5s",
            "keepalives_idle=1.5s in the PostgreSQL URL must be a whole number"
        ),
        ("postgres://me@h/db?keepalives_count=0", "keepalives_count=0 in the PostgreSQL URL must be a whole number"),
        // Bare numbers beyond a day, which once overflowed the connection's clock (exit 132).
        (
            "postgres://me@h/db?connect_timeout=10000000000",
            "connect_timeout=10000000000 in the PostgreSQL URL is longer"
        ),
        ("postgres://me@h/db?keepalives_idle=9223372036854775807", "keepalives_idle=9223372036854775807 in the"),
        ("postgres://me@h/db?statement_timeout=9223372036854775807", "is longer than a day"),
        ("postgres://me@h/db?keepalives_count=99999999999999999999", "keepalives_count=99999999999999999999 in the")
    ])
    func badURLsAreRefusedSayingWhy(url: String, expected: String) {
        #expect {
            try PostgresSettings(url: url, environment: [:])
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func aBadURLsPasswordStaysOutOfTheError() {
        #expect {
            try PostgresSettings(url: "mysql://me:hunter2@h/db", environment: [:])
        } throws: { error in
            "\(error)".contains("me:***@h") && !"\(error)".contains("hunter2")
        }
    }

    @Test func thePasswordComesFromTheURLThenPGPASSWORDThenThePasswordFile() throws {
        let directory = TestScratch.url("pgpass")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("pgpass").path
        try """
        # host:port:database:user:password
        other:5432:*:me:wrong
        db.internal:*:jobs:me:from\\:file\\\\x
        """.write(toFile: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        let url = "postgres://me@db.internal/jobs"
        #expect(
            try PostgresSettings(
                url: "postgres://me:inurl@db.internal/jobs", environment: ["PGPASSWORD": "env", "PGPASSFILE": file]
            ).password == "inurl")
        #expect(
            try PostgresSettings(url: url, environment: ["PGPASSWORD": "env", "PGPASSFILE": file]).password == "env")
        #expect(try PostgresSettings(url: url, environment: ["PGPASSFILE": file]).password == "from:file\\x")
        #expect(
            try PostgresSettings(url: "postgres://me@db.internal/other", environment: ["PGPASSFILE": file]).password
                == nil)
        // Like libpq, a password file that others can read is not used.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        #expect(try PostgresSettings(url: url, environment: ["PGPASSFILE": file]).password == nil)
    }

    @Test func aServerThatIsNotThereIsAClearErrorWithoutThePassword() async throws {
        // Port 1 on loopback: nothing listens there.
        let settings = try PostgresSettings(
            url: "postgres://me:hunter2@127.0.0.1:1/db?sslmode=disable", environment: [:])
        await #expect {
            try await PostgresSchema.migrate(settings)
        } throws: { error in
            let text = "\(error)"
            return text.contains("cannot connect to PostgreSQL at postgres://me@127.0.0.1:1/db")
                && !text.contains("hunter2")
        }
    }

    /// Timeouts set through the API are held to the URL's bounds when a connection is made,
    /// instead of overflowing.
    @Test func timeoutsSetThroughTheAPIAreBounded() throws {
        var settings = try PostgresSettings(url: "postgres://me@h/db", environment: [:])
        settings.timeouts.keepalivesIdle = .seconds(Int64.max / 2)
        #expect {
            _ = try PostgresConnector(settings: settings, logger: Logger(label: "test")).configuration()
        } throws: { error in
            "\(error)".contains("PostgresSettings.timeouts.keepalivesIdle must be from 0 to a day")
        }
    }
}
