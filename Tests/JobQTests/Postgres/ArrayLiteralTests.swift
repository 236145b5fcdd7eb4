import Foundation
import PostgresNIO
import Testing

@testable import JobQPostgres

/// The array literals a batch's columns travel in read back, element for element, as what was
/// sent: quotes, backslashes, braces, commas, the word NULL, empty texts, multi-byte characters.
@Suite("PostgreSQL array literals")
struct ArrayLiteralTests {
    @Test(.enabled(if: PostgresTestServer.available, PostgresTestServer.skipReason))
    func textsReadBackAsSent() async throws {
        let texts: [String?] = [
            "plain", #"a "quoted" one"#, #"back\slash\\"#, "{braces},commas", "NULL", "", nil, "ünïcødé 🚀 日本",
            #"\""#, " spaced ", "tab\tand\nnewline", #"{"json": "\"x\""}"#
        ]
        let settings = try PostgresSettings(url: try #require(PostgresTestServer.url))
        let connection = try await PostgresConnector(settings: settings, logger: PostgresTestServer.logger).connect()
        defer { Task { try? await connection.close() } }
        var binds = PostgresBindings()
        binds.append(ArrayLiteral.texts(texts))
        let rows = try await connection.query(
            PostgresQuery(
                unsafeSQL: "SELECT element FROM unnest(CAST($1 AS text[])) WITH ORDINALITY AS t(element, n) ORDER BY n",
                binds: binds),
            logger: PostgresTestServer.logger)
        var read: [String?] = []
        for try await element in rows.decode(String?.self) { read.append(element) }
        #expect(read == texts)
    }

    @Test func literalsAreWhatPostgreSQLReads() {
        #expect(ArrayLiteral.texts(["a", #"b"c"#, nil]) == #"{"a","b\"c",NULL}"#)
        #expect(ArrayLiteral.texts([String]()) == "{}")
        #expect(ArrayLiteral.integers([1, -2]) == "{1,-2}")
        #expect(ArrayLiteral.reals([0.5, nil]) == "{0.5,NULL}")
    }
}
