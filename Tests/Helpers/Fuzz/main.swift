// Fuzzing the parsers that take outside text: durations, job lines (`jobq enqueue --file`), the
// names of states, event kinds and tracking members, workflow and tree files (`jobq workflow
// submit`), what the dashboard does with a request's text and a job's JSON (form bodies,
// Host names, HTML escaping, JSON made readable), and the checks of what every store can hold
// (JSON with escaped NULs or lone surrogates, names, JSON pointers).
//
// Built with `-DFUZZING -sanitize=fuzzer` (scripts/fuzz.sh) it is a libFuzzer target; the target
// is chosen by JOBQ_FUZZ_TARGET (duration, jobline, names, workflow, dashboard, stored). Built normally it replays a corpus
// folder (Tests/Fuzz/corpus/<target>/...), which is how inputs that once crashed stay
// regression tests: `jobq-fuzz replay Tests/Fuzz/corpus`.

import Foundation
import JobQCore
import JobQWebText

/// Feeds one input to one parser. Any outcome is fine except a crash or a broken invariant.
func exercise(target: String, _ bytes: UnsafeBufferPointer<UInt8>) {
    let text = String(decoding: bytes, as: UTF8.self)
    switch target {
    case "duration":
        if let duration = try? DurationParser.parse(text) {
            precondition(duration >= .zero, "a parsed duration is never negative")
            // What format prints, parse reads back to the same value (to the millisecond).
            let again = try? DurationParser.parse(DurationParser.format(duration))
            precondition(
                again.map { abs(($0 - duration).inSeconds) < 0.002 } ?? false, "format/parse round trip of \(text)")
        }
    case "jobline":
        if let request = try? JobRequest(jsonLine: text) {
            precondition(!request.executor.isEmpty, "an accepted job line names its executor")
            precondition((1...1000).contains(request.options.maxAttempts))
            precondition(
                (try? JSONSerialization.jsonObject(with: Data(request.payloadJSON.utf8), options: [.fragmentsAllowed]))
                    != nil,
                "an accepted payload is valid JSON")
        }
    case "workflow":
        // Any outcome but a crash. (Not "accepted means JSONSerialization accepts it too": the
        // fuzzer found files with a key given twice, which the workflow parser takes, keeping the
        // last value, and JSONSerialization refuses.)
        _ = try? Workflow(json: text)
    case "dashboard":
        _ = FormBody.parse(text)
        _ = Loopback.host(ofAuthority: text).map(Loopback.isName)
        let escaped = HTML.escape(text)
        precondition(!escaped.contains(where: { "<>\"'".contains($0) }), "escaped text holds no markup characters")
        let limit = 4096
        let (pretty, complete) = HTML.prettyJSON(text, limit: limit)
        // Cut at a byte boundary, a character in two shows as one replacement character.
        precondition(pretty.utf8.count <= limit + 3, "the rendering stops at its limit")
        if complete {
            precondition(
                withoutLayout(pretty) == withoutLayout(text),
                "reading layout changes nothing but blanks outside strings")
        }
    case "stored":
        // What every store can hold: the checks at entry never trap, and what they accept
        // has the properties the stores rely on.
        let plain = StoredText.plain(text)
        precondition(!plain.utf8.contains(0), "plain text holds no NUL")
        precondition(text.utf8.contains(0) || plain == text, "text without a NUL is left as it is")
        // The one-pass check of plain JSON accepts only what Foundation's parser accepts.
        if PlainJSON.isValid(text) {
            precondition(
                (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil,
                "plain JSON is valid JSON")
        }
        if (try? JSONText.validate(text, what: "fuzz")) != nil {
            precondition(
                StoredText.problem(inJSON: text) == nil, "accepted JSON holds nothing a store cannot read back")
        }
        if (try? Label.check(text, what: "fuzz")) != nil {
            precondition((1...Label.maximumBytes).contains(text.utf8.count), "an accepted name is 1 to 200 bytes")
            precondition(
                !text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) },
                "an accepted name holds no control character")
        }
        if let pointer = try? PayloadPointer(text) {
            precondition(!pointer.names.isEmpty, "an accepted pointer names a member")
        }
        _ = Label.shown(text)
    default:
        _ = try? JobState(parsing: text)
        _ = try? EventKind(parsing: text)
        _ = try? TrackingMember(parsing: text)
    }
}

/// JSON text without the blanks outside strings: what pretty-printing may change.
func withoutLayout(_ text: String) -> [UInt8] {
    Array(JSONText.minified(text).utf8)
}

#if FUZZING
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        let target = ProcessInfo.processInfo.environment["JOBQ_FUZZ_TARGET"] ?? "duration"
        exercise(target: target, UnsafeBufferPointer(start: data, count: size))
        return 0
    }

    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
    ) -> CInt

    /// SwiftPM links an executable's entry point as `<product>_main`; hand it to libFuzzer.
    @_cdecl("jobq_fuzz_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var count = argc
        var arguments = argv
        return runFuzzerDriver(&count, &arguments) { data, size in fuzzOneInput(data, size) }
    }
#else
    @main
    enum Replay {
        static func main() throws {
            let arguments = CommandLine.arguments
            guard arguments.count == 3, arguments[1] == "replay" else {
                FileHandle.standardError.write(Data("usage: jobq-fuzz replay CORPUS_DIRECTORY\n".utf8))
                exit(2)
            }
            let root = URL(fileURLWithPath: arguments[2])
            var count = 0
            for target in try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() {
                let folder = root.appendingPathComponent(target)
                for file in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() {
                    let data = try Data(contentsOf: folder.appendingPathComponent(file))
                    data.withUnsafeBytes { raw in exercise(target: target, raw.bindMemory(to: UInt8.self)) }
                    count += 1
                }
            }
            print("replayed \(count) inputs without a crash")
        }
    }
#endif
