import Foundation
import HTTPTypes
import Hummingbird
import JobQCore
import ServiceLifecycle

extension Dashboard {
    /// `GET /events/stream`: the store's event feed as server-sent events, from now on (or
    /// after `Last-Event-ID` when the browser reconnects). Each event carries only ids and
    /// kind (`{"id":…,"job":…,"kind":…,"queue":…,"workflow":…}`), never payloads; pages fetch
    /// what changed. A comment every 15 seconds finds closed connections; the stream ends when
    /// the client goes or the server shuts down.
    func addStreamRoute<Context: RequestContext>(to router: Router<Context>) {
        router.get("/events/stream") { request, context -> Response in
            var cursor: Int64?
            if let last = request.headers[.lastEventID] {
                guard let id = Int64(last), id >= 0 else {
                    return Pages.error(
                        .badRequest, "Last-Event-ID '\(last)' is not an event id (a whole number)", dashboard: self)
                }
                cursor = id
            }
            guard let slot = streams.enter() else {
                return Pages.error(
                    .serviceUnavailable, "Too many live update streams are open; try again later.", dashboard: self)
            }
            let start: Int64
            do {
                if let cursor { start = cursor } else { start = try await queue.latestEventID() }
            } catch {
                // The stream never started: its slot goes back at once.
                slot.giveBack()
                return try failure(error, request: request, context: context)
            }
            let feed = queue.events(since: start)
            let logger = context.logger
            let body = ResponseBody { writer in
                defer { slot.giveBack() }
                let (items, continuation) = AsyncStream<StreamItem>.makeStream(
                    bufferingPolicy: .bufferingNewest(10_000))
                let queue = self.queue
                let forward = Task {
                    var feed = feed
                    while true {
                        do {
                            for try await event in feed { continuation.yield(.event(event)) }
                        } catch JobQueueError.eventsDeleted {
                            // The browser was away while events it had not seen were deleted
                            // (retention): it goes on from now, its pages refetching what they
                            // show on the next event, rather than reconnecting to the same
                            // refusal every two seconds.
                            if let latest = try? await queue.latestEventID() {
                                feed = queue.events(since: latest)
                                continue
                            }
                        } catch {
                            logger.warning("dashboard live stream: the event feed stopped: \(error)")
                        }
                        break
                    }
                    continuation.finish()
                }
                let ping = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(15))
                        continuation.yield(.ping)
                    }
                }
                defer {
                    forward.cancel()
                    ping.cancel()
                }
                // The server's graceful shutdown ends the stream, so that it does not wait for
                // the browser to leave.
                await withGracefulShutdownHandler {
                    do {
                        try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                        for await item in items {
                            try await writer.write(ByteBuffer(string: item.text))
                        }
                    } catch {
                        // The client went away.
                    }
                } onGracefulShutdown: {
                    continuation.finish()
                }
                try? await writer.finish(nil)
            }
            return Response(
                status: .ok,
                headers: [
                    .contentType: "text/event-stream", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no"
                ],
                body: body)
        }
    }
}

/// One message of the live stream.
enum StreamItem: Sendable {
    case event(JobEvent)
    case ping

    var text: String {
        switch self {
        case .ping:
            return ": ping\n\n"
        case .event(let event):
            var fields = ["\"id\":\(event.id)", "\"kind\":\"\(event.kind.rawValue)\""]
            if let job = event.jobID { fields.append("\"job\":\(job)") }
            if let workflow = event.workflowID { fields.append("\"workflow\":\(workflow)") }
            if let queue = event.queue, let data = try? JSONSerialization.data(withJSONObject: [queue], options: []),
                let quoted = String(data: data, encoding: .utf8)
            {
                fields.append("\"queue\":" + quoted.dropFirst().dropLast())
            }
            return "id: \(event.id)\nevent: job\ndata: {\(fields.joined(separator: ","))}\n\n"
        }
    }
}

extension HTTPField.Name {
    static let lastEventID = Self("Last-Event-ID")!
}
