import Foundation
import Testing

@testable import JobQCore

/// The one-pass check of plain JSON accepts only what Foundation's parser accepts (so the texts
/// jobq takes are what they were), and accepts the payloads most jobs have (so it is used).
@Suite("Plain JSON")
struct PlainJSONTests {
    private func foundationAccepts(_ text: String) -> Bool {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil
    }

    @Test func acceptsPlainPayloads() {
        let plain = [
            #"{"a":1,"b":2}"#, #" { "a" : [ 1 , -2.5 , 0 , 0.25 ] , "b" : { } , "c" : [ ] } "#, "true", "null", "0",
            "-0",
            #""text with \"quotes\", \\ \/ \n\t\b\f\r and \u00e9 and \u20AC""#,
            #"{"nested":{"deep":[[[{"x":false}]]]}}"#,
            #"{"émoji":"🎉","日本":"語"}"#, #"[123456789012345, 1.23456789012345]"#
        ]
        for text in plain {
            #expect(PlainJSON.isValid(text), "\(text)")
            #expect(foundationAccepts(text), "\(text)")
        }
    }

    @Test func leavesEverythingElseToFoundation() {
        let others = [
            "", " ", "{", "}", "[1,]", #"{"a":1,}"#, #"{"a" 1}"#, #"{a:1}"#, "01", "1.", ".5", "+1", "1e3", "1E-2",
            "1234567890123456", "NaN", "Infinity", "tru", "nul", #""unterminated"#, "\"tab\there\"", #""\x""#,
            #""\u12""#, #""\ud800""#, #""\udc00x""#, "[1] [2]", "{\"a\":1}x", "\u{FEFF}{}",
            String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        ]
        for text in others {
            #expect(!PlainJSON.isValid(text), "\(text)")
        }
    }

    /// Random edits of valid texts: whatever the check accepts, Foundation accepts.
    @Test func neverAcceptsWhatFoundationRefuses() {
        let seeds = [
            #"{"a":[1,2.5,"x\n",true,null],"b":{"c":-0.5}}"#, #"[{"k":"v"},[],{}]"#, #""\u00e9\\\"""#
        ]
        let alphabet = Array(#"{}[]":,.-+0123456789eEtrufalsn\u "#.utf8) + [0x09, 0x0A, 0x01]
        var generator = SystemRandomNumberGenerator()
        var accepted = 0
        for round in 0..<20_000 {
            var bytes = Array(seeds[round % seeds.count].utf8)
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes.remove(at: position)
                case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: position)
                default: bytes[position] = alphabet.randomElement(using: &generator)!
                }
                if bytes.isEmpty { bytes = [UInt8(ascii: "1")] }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if PlainJSON.isValid(text) {
                accepted += 1
                #expect(foundationAccepts(text), "accepted what Foundation refuses: \(text)")
            }
        }
        #expect(accepted > 100, "the edits left some texts valid")
    }
}
