import Foundation
import Testing

@testable import JobQCore
@testable import JobQPostgres
@testable import JobQSQL
@testable import JobQSQLite

/// `sslmode=verify-ca` and `verify-full` check the server's certificate against the CA named
/// by `sslrootcert`, as libpq does: a certificate from any other CA (say, a public one) is
/// refused, and with no CA named they refuse to connect rather than trust the system's roots.
@Suite("PostgreSQL TLS verification")
struct PostgresTLSTests {
    /// The CA that signed the test server's certificate (`scripts/postgres.sh ca`; .ci/run sets it).
    static let ca = ProcessInfo.processInfo.environment["JOBQ_TEST_POSTGRES_CA"].flatMap { $0.isEmpty ? nil : $0 }

    /// The test server's URL with `query` in place of its own (which turns TLS off).
    static func url(_ query: String) throws -> String {
        let base = try #require(PostgresTestServer.url)
        return String(base.prefix { $0 != "?" }) + "?" + query
    }

    static func connects(_ url: String, home: String) async throws {
        let settings = try PostgresSettings(url: url, environment: ["HOME": home])
        _ = try await PostgresSchema.version(settings, logger: PostgresTestServer.logger)
    }

    @Test(
        .enabled(
            if: PostgresTestServer.available && ca != nil,
            "needs JOBQ_TEST_POSTGRES_URL and JOBQ_TEST_POSTGRES_CA (scripts/postgres.sh ca)"))
    func verificationUsesTheNamedCAAndNothingElse() async throws {
        let ca = try #require(Self.ca)
        let scratch = TestScratch.url("jobq-tls")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let home = scratch.path
        // Another CA, which did not sign the server's certificate (as a public CA would not).
        let other = scratch.appendingPathComponent("other-ca.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=someone else",
            "-keyout", scratch.appendingPathComponent("other.key").path, "-out", other
        ]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        try #require(openssl.terminationStatus == 0, "openssl made the other CA")

        try await Self.connects(try Self.url("sslmode=verify-ca&sslrootcert=\(ca)"), home: home)
        try await Self.connects(try Self.url("sslmode=verify-full&sslrootcert=\(ca)"), home: home)
        for mode in ["verify-ca", "verify-full", "require"] {
            await #expect(throws: (any Error).self, "\(mode) with a CA that did not sign the server's certificate") {
                try await Self.connects(try Self.url("sslmode=\(mode)&sslrootcert=\(other)"), home: home)
            }
        }
        await #expect {
            try await Self.connects(try Self.url("sslmode=verify-ca"), home: home)
        } throws: { error in
            "\(error)".contains("sslrootcert=/path/to/ca.pem")
        }
        await #expect {
            try await Self.connects(try Self.url("sslmode=verify-full&sslrootcert=\(home)/missing.pem"), home: home)
        } throws: { error in
            "\(error)".contains("cannot read CA certificates")
        }
        // libpq's default place for the CA.
        try FileManager.default.createDirectory(atPath: home + "/.postgresql", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: ca, toPath: home + "/.postgresql/root.crt")
        try await Self.connects(try Self.url("sslmode=verify-ca"), home: home)
    }

    @Test func sslrootcertIsReadAndShown() throws {
        let settings = try PostgresSettings(
            url: "postgres://u@h/db?sslmode=verify-full&sslrootcert=/etc/ca.pem", environment: [:])
        #expect(settings.rootCertificates == .file("/etc/ca.pem"))
        #expect(settings.description == "postgres://u@h:5432/db?sslmode=verify-full&sslrootcert=/etc/ca.pem")
        #expect(
            try PostgresSettings(url: "postgres://u@h/db?sslmode=verify-ca&sslrootcert=system", environment: [:])
                .rootCertificates == .system)
        #expect(throws: JobQueueError.self) {
            try PostgresSettings(url: "postgres://u@h/db?sslrootcert=", environment: [:])
        }
    }
}
