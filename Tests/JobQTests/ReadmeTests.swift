import Foundation
import Testing

@Suite("README")
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func quickstartInReadmeIsTheCompiledQuickstart() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: Self.root.appendingPathComponent("Sources/Quickstart/main.swift"), encoding: .utf8)
        #expect(readme.contains("```swift\n" + source + "```"), "README's Swift block must equal Sources/Quickstart/main.swift")
    }

    @Test func readmeStartsWithTheDemoAndTestCommands() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).prefix(6).map(String.init)
        #expect(lines == ["# jobq", "", "```sh", "swift run jobq demo", "swift test", "```"])
        let ci = try String(contentsOf: Self.root.appendingPathComponent(".ci/run"), encoding: .utf8)
        #expect(ci.split(separator: "\n").contains("swift test"), ".ci/run runs README's test command")
    }
}
