import Foundation
import Testing

@testable import JobQCore
@testable import JobQSQL

/// What every store can hold, checked without a store: free text made storable, JSON no store
/// can read back found, names and JSON pointers read strictly.
@Suite("Storable text")
struct StorableTextTests {
    @Test func nulsInFreeTextAreReplacedAndNothingElseChanges() {
        #expect(StoredText.plain("x\u{0}y\u{0}") == "x\u{FFFD}y\u{FFFD}")
        let untouched = "tab\t, newline\n, é, 😀, \u{1B}[2J"
        #expect(StoredText.plain(untouched) == untouched)
    }

    @Test(arguments: [
        (#"{"a":"\u0000"}"#, "an escaped NUL (\\u0000) at byte 6"),
        (#"{"\u0000":1}"#, "an escaped NUL (\\u0000) at byte 2"),
        (#"["\ud800"]"#, "a lone surrogate (\\ud800) at byte 2"),
        (#"["\udc00"]"#, "a lone surrogate (\\udc00) at byte 2"),
        (#"["\ud800\u0041"]"#, "a lone surrogate (\\ud800) at byte 2"),
        (#"["\ud800\n"]"#, "a lone surrogate (\\ud800) at byte 2"),
        (#"["\uD800"]"#, "a lone surrogate (\\uD800) at byte 2"),
        ("[\"a\u{0}\"]", "a NUL byte at byte 3"),
        (
            String(repeating: "[", count: 513) + String(repeating: "]", count: 513),
            "nesting deeper than 512 levels at byte 512"
        ),
        (#"{"a":"[[[[\"","b":{"c":"\u0000"}}"#, "an escaped NUL (\\u0000) at byte 24")
    ])
    func jsonNoStoreCanReadBackIsFound(json: String, problem: String) {
        #expect(StoredText.problem(inJSON: json) == problem)
    }

    @Test(arguments: [
        #"{"a":"\\u0000"}"#, #"["\ud83d\ude00"]"#, #"{"a":"plain","b":[1,2.5,true,null]}"#, #""\\\\\"\u0041""#, "[]",
        String(repeating: "[", count: 512) + String(repeating: "]", count: 512),
        #"{"deep":""# + String(repeating: "[", count: 600) + #"","x":"\n"}"#
    ])
    func jsonEveryStoreCanHoldPasses(json: String) {
        #expect(StoredText.problem(inJSON: json) == nil, "\(json)")
    }

    @Test func namesAreBytesWithoutControlCharacters() throws {
        try Label.check(String(repeating: "é", count: 100), what: "queue name")  // 200 bytes
        for (name, expected) in [
            (String(repeating: "é", count: 101), "got 202 bytes"), ("", "got 0 bytes"),
            ("a\u{0}b", "U+0000"), ("a\u{1B}[2J", "U+001B"), ("a\u{85}", "U+0085"), ("a\u{7F}", "U+007F")
        ] {
            #expect("\(name.unicodeScalars.map(\.value))") {
                try Label.check(name, what: "queue name")
            } throws: { error in
                "\(error)".contains(expected)
            }
        }
        #expect(Label.shown("a\u{1B}[2J\nb") == "a?[2J?b")
    }

    @Test func jsonPointersAreReadAsRFC6901Says() throws {
        #expect(try PayloadPointer("/a~0b~1c").names == ["a~b/c"])
        #expect(try PayloadPointer("/½").names == ["½"], "not an array index: not ASCII digits")
        #expect(try PayloadPointer("/x/٣").names == ["x", "٣"])
        for bad in ["/a~", "/a~2b", "/~", "/items/0", "a", "/"] {
            #expect(throws: JobQueueError.self, "\(bad)") { try PayloadPointer(bad) }
        }
    }

    @Test func hugeStoredDurationsAreReadWithoutTrapping() {
        let bound = Duration.seconds(Int64(DurationParser.maximumSeconds))
        #expect(Duration(storedSeconds: 1e300) == bound)
        #expect(Duration(storedSeconds: .infinity) == bound)
        #expect(Duration(storedSeconds: .nan) == bound)
        #expect(Duration(storedSeconds: 1.5) == .milliseconds(1500))
        #expect(DurationParser.format(.seconds(Int64.max)) == "\((Double(Int64.max) / 86_400).rounded())d")
    }
}
