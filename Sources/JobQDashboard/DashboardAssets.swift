/// The dashboard's stylesheet and script, served from the binary (no build step, no CDN).
enum DashboardAssets {
    static let css = baseCSS + "\n" + treeDepthCSS

    /// A tree node's indentation by its depth class (`depth-0` … `depth-N`): a class, because the
    /// content security policy allows no inline `style` attribute. Deeper nodes share the last.
    static let treeDepthCSS =
        (0...maximumTreeDepthClass).map { depth in
            "li.tree-node.depth-\(depth) { padding-left: calc(.7rem + \(depth) * 1.5rem); }"
        }.joined(separator: "\n") + "\n"
    static let maximumTreeDepthClass = 16

    private static let baseCSS = """
        :root { --fg: #1d2330; --muted: #6b7385; --line: #e3e6ec; --bg: #f7f8fa; --card: #fff; --accent: #3056d3;
          --ready: #3056d3; --running: #8a4fd8; --scheduled: #5b6b82; --waiting: #9a7b1c; --failed: #d97706;
          --succeeded: #15803d; --dead: #c62828; --cancelled: #6b7280; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--fg); background: var(--bg); }
        header { display: flex; align-items: center; gap: 1.2rem; padding: .6rem 1.5rem; background: #111827; color: #e5e7eb; }
        header a { color: #cbd5e1; text-decoration: none; }
        header a:hover, header nav a.current { color: #fff; }
        header nav { display: flex; gap: 1rem; }
        header nav a.current { border-bottom: 2px solid #60a5fa; }
        .brand { font-weight: 700; font-size: 1.1rem; color: #fff !important; letter-spacing: .02em; }
        .store { margin-left: auto; color: #9ca3af; font-family: ui-monospace, Menlo, monospace; font-size: 12px; }
        .live-status { font-size: 12px; color: #9ca3af; }
        .live-status::before { content: "●"; margin-right: .3em; color: #6b7280; }
        .live-status.on::before { color: #22c55e; }
        main { padding: 1rem 1.5rem 3rem; max-width: 1400px; }
        h1 { font-size: 1.35rem; margin: .4rem 0 1rem; }
        h2 { font-size: 1.05rem; margin: 1.6rem 0 .6rem; }
        a { color: var(--accent); }
        table { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line); border-radius: 6px; overflow: hidden; }
        th, td { text-align: left; padding: .45rem .7rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; background: #fbfbfc; }
        tr:last-child td { border-bottom: none; }
        tbody tr:hover { background: #f3f5f9; }
        td code { word-break: break-all; }
        .muted { color: var(--muted); }
        .summary { color: var(--muted); }
        .badge { display: inline-block; padding: 0 .5em; border-radius: 999px; font-size: 12px; font-weight: 600; line-height: 1.6;
          background: #eef0f4; color: var(--muted); }
        .state-ready { color: var(--ready); } .badge.state-ready { background: #e8edfc; }
        .state-running { color: var(--running); } .badge.state-running { background: #f1e9fc; }
        .state-scheduled { color: var(--scheduled); } .badge.state-scheduled { background: #eceff4; }
        .state-waiting { color: var(--waiting); } .badge.state-waiting { background: #faf3dc; }
        .state-failed { color: var(--failed); } .badge.state-failed { background: #fdf0e1; }
        .state-succeeded { color: var(--succeeded); } .badge.state-succeeded { background: #e5f4ea; }
        .state-dead { color: var(--dead); } .badge.state-dead { background: #fbe7e7; }
        .state-cancelled { color: var(--cancelled); } .badge.state-cancelled { background: #eeeff1; }
        .badge.state-paused { background: #fff3cd; color: #8a6d00; }
        a.count { font-weight: 600; text-decoration: none; }
        .spark svg { vertical-align: middle; background: #f3f4f6; border-radius: 2px; }
        .bar-ok { fill: #22c55e; } .bar-dead { fill: #ef4444; } .bar-cancelled { fill: #9ca3af; }
        svg.timeline { vertical-align: middle; background: #f3f4f6; border-radius: 2px; }
        .span-step { fill: #2563eb; } .span-sleep { fill: #9ca3af; } .span-signal, .span-event { fill: #d97706; }
        .span-call { fill: #7c3aed; }
        form.inline { display: inline; margin: 0 .3rem 0 0; }
        button { font: inherit; padding: .25rem .8rem; border-radius: 5px; border: 1px solid #c7cdd8; background: #fff; cursor: pointer; }
        button:hover { background: #f0f3f8; }
        button.danger { color: var(--dead); border-color: #efc2c2; }
        button.quiet { color: var(--muted); }
        .actions { margin-bottom: 1rem; }
        dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1.2rem; background: var(--card); border: 1px solid var(--line);
          border-radius: 6px; padding: .8rem 1rem; margin: 0; }
        dl.fields dt { color: var(--muted); }
        dl.fields dd { margin: 0; }
        pre { background: #0f172a; color: #e2e8f0; padding: .8rem 1rem; border-radius: 6px; overflow: auto; max-height: 28rem; font-size: 12.5px; }
        pre.error { background: #fff5f5; color: #9b1c1c; border: 1px solid #f5c6c6; white-space: pre-wrap; }
        p.error, .error { color: var(--dead); }
        progress { width: 12rem; vertical-align: middle; }
        form.filters, p.filters { display: flex; flex-wrap: wrap; gap: .8rem; align-items: end; margin-bottom: 1rem; }
        form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
        form.filters input, form.filters select { font: inherit; padding: .25rem .4rem; border: 1px solid #c7cdd8; border-radius: 4px; min-width: 9rem; }
        p.filters a.current { font-weight: 700; text-decoration: none; color: var(--fg); }
        .pager { margin-top: .8rem; }
        .history-chart { margin: 0 0 1rem; background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .4rem; overflow-x: auto; }
        .history-chart figcaption { font-weight: 600; margin-bottom: .2rem; }
        .h-key { font-weight: normal; color: var(--muted); margin-left: .8rem; font-size: .85rem; }
        .h-key svg { vertical-align: -1px; margin-right: .25rem; border: 1px solid #94a3b8; }
        svg.history .h-axis { stroke: #94a3b8; stroke-width: 1; }
        svg.history .h-label { font-size: 11px; fill: var(--muted); }
        .h-succeeded { fill: var(--succeeded); }
        .h-retried { fill: var(--failed); fill-opacity: .55; stroke: var(--failed); stroke-dasharray: 2 2; }
        .h-dead { fill: var(--dead); stroke: #000; stroke-width: .6; }
        .h-cancelled { fill: #fff; stroke: var(--cancelled); stroke-width: 1.2; }
        svg.history polyline { fill: none; stroke-width: 1.6; }
        polyline.h-p50, circle.h-p50, rect.h-p50 { stroke: var(--ready); fill: var(--ready); }
        polyline.h-p95, circle.h-p95, rect.h-p95 { stroke: var(--running); fill: var(--running); stroke-dasharray: 6 3; }
        polyline.h-max, circle.h-max, rect.h-max { stroke: var(--dead); fill: var(--dead); stroke-dasharray: 2 2; }
        polyline.h-p50, polyline.h-p95, polyline.h-max { fill: none; }
        .h-running { fill: var(--running); fill-opacity: .75; }
        .h-ready { fill: var(--ready); fill-opacity: .45; }
        .h-scheduled { fill: var(--scheduled); fill-opacity: .35; stroke: var(--scheduled); stroke-dasharray: 4 2; }
        .h-waiting { fill: var(--waiting); fill-opacity: .35; stroke: var(--waiting); stroke-dasharray: 1 2; }
        .h-hover { fill: transparent; }
        .windows { margin: .2rem 0 .8rem; }
        .graph { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .4rem; }
        svg.workflow-graph text { font-size: 12px; fill: var(--fg); }
        svg.workflow-graph .wf-label { fill: var(--muted); font-size: 11px; }
        svg.workflow-graph .wf-state { fill: currentColor; font-weight: 600; }
        svg.workflow-graph .wf-frame { fill: #fbfbfc; stroke: #cbd5e1; stroke-width: 1.5; }
        svg.workflow-graph .wf-frame.state-succeeded { stroke: var(--succeeded); }
        svg.workflow-graph .wf-frame.state-running { stroke: var(--running); }
        svg.workflow-graph .wf-frame.state-failed { stroke: var(--dead); stroke-dasharray: 6 3; }
        svg.workflow-graph .wf-frame.state-cancelled { stroke: var(--cancelled); stroke-dasharray: 2 3; }
        svg.workflow-graph .wf-node { fill: var(--card); stroke: #94a3b8; stroke-width: 1.5; }
        svg.workflow-graph .wf-node.state-succeeded { stroke: var(--succeeded); fill: #e5f4ea; }
        svg.workflow-graph .wf-node.state-running { stroke: var(--running); fill: #f1e9fc; stroke-width: 3; }
        svg.workflow-graph .wf-node.state-ready { stroke: var(--ready); fill: #e8edfc; }
        svg.workflow-graph .wf-node.state-waiting { stroke: var(--waiting); fill: #faf3dc; }
        svg.workflow-graph .wf-node.state-scheduled { stroke: var(--scheduled); fill: #eceff4; }
        svg.workflow-graph .wf-node.state-failed { stroke: var(--failed); fill: #fdf0e1; stroke-dasharray: 6 3; }
        svg.workflow-graph .wf-node.state-dead { stroke: var(--dead); fill: #fbe7e7; stroke-dasharray: 6 3; stroke-width: 3; }
        svg.workflow-graph .wf-node.state-cancelled { stroke: var(--cancelled); fill: #eeeff1; stroke-dasharray: 2 3; }
        svg.workflow-graph .wf-node.folded { fill: #f3f5f9; stroke-dasharray: 10 3; }
        svg.workflow-graph a:hover .wf-node { stroke-width: 3.5; }
        svg.workflow-graph .wf-edge { stroke: #94a3b8; stroke-width: 1.5; }
        svg.workflow-graph marker path { fill: #94a3b8; }
        .group { border: 1px solid var(--line); border-left: 4px solid #cbd5e1; border-radius: 6px; background: var(--card); padding: .4rem .7rem; margin: .3rem 0; }
        .group[data-state="succeeded"] { border-left-color: var(--succeeded); } .group[data-state="failed"] { border-left-color: var(--dead); }
        .group[data-state="cancelled"] { border-left-color: var(--cancelled); } .group[data-state="running"] { border-left-color: var(--running); }
        .group-head .kind { text-transform: uppercase; font-size: 11px; letter-spacing: .06em; color: var(--muted); }
        .group.parallel > ul.members { display: flex; flex-wrap: wrap; gap: .5rem; list-style: none; padding-left: 0; }
        .group.parallel > ul.members > li { flex: 1 1 14rem; }
        ol.members, ul.members { margin: .4rem 0 .2rem; padding-left: 1.4rem; }
        li.member { margin: .2rem 0; }
        ul.tree { list-style: none; padding: 0; background: var(--card); border: 1px solid var(--line); border-radius: 6px; }
        li.tree-node { padding: .3rem .7rem; border-bottom: 1px solid var(--line); }
        li.tree-node:last-child { border-bottom: none; }
        .node-name { font-weight: 600; }
        form.login { display: flex; gap: .6rem; align-items: end; }
        form.login input { font: inherit; padding: .3rem .5rem; }
        #live.updated { animation: flash .6s ease-out; }
        @keyframes flash { from { background: #fff9db; } to { background: transparent; } }
        """

    /// Follows `/events/stream`; when an event concerns the page's live part (any event for
    /// lists, this job's or workflow's for theirs), fetches that part again (at most every
    /// 300ms) and swaps it in. Pages read fine without it.
    static let javascript = """
        "use strict";
        (function () {
          var live = document.getElementById("live");
          var status = document.getElementById("live-status");
          if (!live || !window.EventSource) { if (status) status.textContent = "static"; return; }
          var job = live.getAttribute("data-job");
          var workflow = live.getAttribute("data-workflow");
          var timer = null;
          function refresh() {
            timer = null;
            fetch(live.getAttribute("data-live"), { credentials: "same-origin", headers: { "Accept": "text/html" } })
              .then(function (response) { return response.ok ? response.text() : null; })
              .then(function (html) {
                if (html === null) return;
                live.innerHTML = html;
                live.classList.remove("updated");
                void live.offsetWidth;
                live.classList.add("updated");
                document.body.setAttribute("data-updates", String(Number(document.body.getAttribute("data-updates") || "0") + 1));
              });
          }
          var source = new EventSource("/events/stream");
          source.onopen = function () { if (status) status.classList.add("on"); };
          source.onerror = function () { if (status) status.classList.remove("on"); };
          source.addEventListener("job", function (message) {
            var event = JSON.parse(message.data);
            if (job && String(event.job) !== job) return;
            if (workflow && String(event.workflow) !== workflow) return;
            if (!timer) timer = setTimeout(refresh, 300);
          });
        })();
        """
}
