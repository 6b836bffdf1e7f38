#include "controller/web_page.h"

namespace ds {
namespace {

// The page's three files. Kept here as raw strings so the binary carries them (no file to
// install next to it); edit them in place.
constexpr std::string_view kIndexHtml = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dynamic-scheduler</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/app.css">
</head>
<body>
<header>
  <h1>dynamic-scheduler</h1>
  <span class="muted">mark</span> <code id="mark"></code>
  <span id="status" class="pill">loading</span>
  <span id="updated" class="muted"></span>
  <span id="connection" class="muted"></span>
</header>
<section id="banner" class="banner" hidden></section>
<section id="summary" class="cards"></section>
<section>
  <h2>Nodes</h2>
  <div class="controls">
    <input id="filter" type="search" placeholder="filter by node name" autocomplete="off" aria-label="filter by node name">
    <select id="show" aria-label="show">
      <option value="all">all nodes</option>
      <option value="marked">marked</option>
      <option value="hot">hot or capped</option>
      <option value="capped">capped</option>
      <option value="held">held by the rebalancer</option>
      <option value="unknown">unknown</option>
      <option value="cold">cold</option>
    </select>
    <span id="count" class="muted"></span>
    <span class="pager">
      <button id="prev" type="button" aria-label="previous page">&lsaquo;</button>
      <span id="page"></span>
      <button id="next" type="button" aria-label="next page">&rsaquo;</button>
      <select id="per-page" aria-label="rows per page">
        <option value="50">50 rows</option>
        <option value="100" selected>100 rows</option>
        <option value="500">500 rows</option>
      </select>
    </span>
  </div>
  <table class="grid">
    <thead><tr id="head"></tr></thead>
    <tbody id="rows"></tbody>
  </table>
  <p class="muted legend">Values are the last cycle's. <span class="over">over the threshold</span>
    <span class="band">between the clear threshold and the threshold (a mark stays)</span>
    <span class="ok">cleared</span>. Click a column to sort.</p>
</section>
<section>
  <h2>Recent mark changes</h2>
  <table class="grid">
    <thead><tr><th>at</th><th>node</th><th>change</th><th>reason</th></tr></thead>
    <tbody id="changes"></tbody>
  </table>
  <p id="no-changes" class="muted">No mark set or removed since this process started.</p>
</section>
<section id="rebalance-section" hidden>
  <h2>Rebalancing</h2>
  <div id="figures" class="cards"></div>
  <h3>Marked nodes</h3>
  <table class="grid">
    <thead><tr><th>node</th><th>qualification</th><th>rule</th><th>load</th><th>goal</th><th>limited by</th><th>mark held</th></tr></thead>
    <tbody id="rb-nodes"></tbody>
  </table>
  <h3>Recent evictions</h3>
  <table class="grid">
    <thead><tr><th>at</th><th>pod</th><th>node</th><th>result</th><th>replacement fits on</th><th>rule</th><th>pod usage</th></tr></thead>
    <tbody id="evictions"></tbody>
  </table>
</section>
<footer class="muted">dynamic-scheduler <span id="version"></span> &middot; data: <a href="/api/v1/state">/api/v1/state</a>
  <a href="/nodes">/nodes</a> <a href="/rebalance">/rebalance</a> <a href="/metrics">/metrics</a> <a href="/status">/status</a></footer>
<script src="/ui/app.js"></script>
</body>
</html>
)HTML";

constexpr std::string_view kAppCss =
    R"CSS(:root { --fg: #1d2433; --muted: #687083; --line: #e2e5ec; --bg: #f7f8fa; --hot: #c62828;
        --warm: #ef6c00; --ok: #2e7d32; --band: #9a6b00; }
* { box-sizing: border-box; }
body { margin: 0; padding: 0 24px 24px; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
       color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 10px; padding: 16px 0 8px; }
h1 { font-size: 20px; margin: 0 12px 0 0; }
h2 { font-size: 16px; margin: 24px 0 8px; }
h3 { font-size: 14px; margin: 16px 0 6px; }
code { background: #eceff4; padding: 1px 5px; border-radius: 4px; }
.muted { color: var(--muted); }
.pill { padding: 1px 8px; border-radius: 10px; background: #eceff4; font-weight: 600; }
.pill.good { background: #e3f3e4; color: var(--ok); }
.pill.bad { background: #fde7e7; color: var(--hot); }
.banner { background: #fff4e5; border: 1px solid #ffd8a8; border-radius: 6px; padding: 4px 12px; }
.banner p { margin: 6px 0; }
.cards { display: flex; flex-wrap: wrap; gap: 8px; margin-top: 8px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; min-width: 110px; }
.card .value { font-size: 18px; font-weight: 600; }
.card .label { color: var(--muted); font-size: 12px; }
.card.warm .value { color: var(--warm); }
.card.bad .value { color: var(--hot); }
.controls { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin-bottom: 8px; }
.controls input { width: 240px; padding: 4px 8px; }
.pager { margin-left: auto; display: flex; gap: 6px; align-items: center; }
table.grid { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
.grid th, .grid td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: left; white-space: nowrap; }
.grid thead th { position: sticky; top: 0; background: #eef0f4; font-weight: 600; }
#head th { cursor: pointer; user-select: none; }
#head th.sorted.asc::after { content: " \25B2"; font-size: 10px; }
#head th.sorted.desc::after { content: " \25BC"; font-size: 10px; }
.grid td.reason { white-space: normal; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.over, td.over { color: var(--hot); font-weight: 600; }
.band, td.band { color: var(--band); }
.ok, td.ok { color: var(--ok); }
td.none { color: var(--muted); }
td.mark.ours { color: var(--hot); font-weight: 600; }
td.mark.foreign { color: var(--muted); font-style: italic; }
td.state.hot, td.state.capped { color: var(--hot); }
td.state.held { color: var(--warm); }
td.state.unknown, td.state.new { color: var(--muted); }
td.change.marked { color: var(--hot); }
td.change.unmarked { color: var(--ok); }
.legend span { margin-left: 8px; }
footer { margin-top: 24px; font-size: 12px; }
footer a { color: var(--muted); margin-right: 6px; }
)CSS";

constexpr std::string_view kAppJs = R"JS('use strict';
// The page polls /api/v1/state (and /rebalance when rebalancing is on) and redraws. Text from the
// cluster (node names, label values, reasons, errors) goes into the page only through
// textContent and attributes set one by one, never as HTML.
(function () {
  const POLL_MS = 3000;
  const FILTER_DEBOUNCE_MS = 150;
  const STATE_ORDER = {hot: 0, capped: 1, held: 2, unknown: 3, new: 4, cold: 5};
  const $ = (id) => document.getElementById(id);

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function fmtNum(v) {
    if (v === null || v === undefined) return '';
    const a = Math.abs(v);
    if (a >= 1e12) return (v / 1e12).toFixed(1) + ' T';
    if (a >= 1e9) return (v / 1e9).toFixed(1) + ' G';
    if (a >= 1e6) return (v / 1e6).toFixed(1) + ' M';
    if (a >= 1e4) return (v / 1e3).toFixed(1) + ' k';
    return String(Number(v.toFixed(a >= 100 ? 1 : 2)));
  }

  function fmtAgo(epochSeconds, now) {
    let s = Math.max(0, Math.round(now - epochSeconds));
    if (s < 60) return s + ' s ago';
    const m = Math.floor(s / 60);
    if (m < 60) return m + ' min ' + (s % 60) + ' s ago';
    const h = Math.floor(m / 60);
    if (h < 48) return h + ' h ' + (m % 60) + ' min ago';
    return Math.floor(h / 24) + ' d ago';
  }

  // Page state; the data of the last poll and what the user chose.
  let data = null;
  let rows = [];  // prepared rows of data.nodes
  let shown = []; // rows after filter and sort
  let sortKey = 'state';
  let sortDir = 1;
  let page = 0;
  let perPage = 100;
  let filterText = '';
  let show = 'all';
  let filterTimer = 0;
  const stats = {refreshes: 0, lastUpdateMs: 0, lastRenderMs: 0, maxUpdateMs: 0, errors: 0};
  window.dsPage = stats;  // read by the browser test

  function prepare(state) {
    // Graded marks: every level's value is ours.
    const ourValues = state.markLevels ? state.markLevels.map((l) => l.value) : [state.markValue];
    return state.nodes.map((n) => ({
      name: n[0],
      lower: n[0].toLowerCase(),
      mark: n[1],
      ours: n[1] !== '' && ourValues.indexOf(n[1]) >= 0,
      state: n[2],
      since: n[3],
      values: n[4],
    }));
  }

  function keep(r) {
    if (filterText && r.lower.indexOf(filterText) < 0) return false;
    switch (show) {
      case 'marked': return r.ours;
      case 'hot': return r.state === 'hot' || r.state === 'capped';
      case 'all': return true;
      default: return r.state === show;
    }
  }

  function comparator() {
    const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    let f;
    if (sortKey === 'name') {
      f = byName;
    } else if (sortKey === 'mark') {
      const rank = (r) => (r.ours ? 0 : r.mark !== '' ? 1 : 2);
      f = (a, b) => rank(a) - rank(b);
    } else if (sortKey === 'state') {
      const rank = (r) => (r.state in STATE_ORDER ? STATE_ORDER[r.state] : 9);
      f = (a, b) => rank(a) - rank(b);
    } else if (sortKey === 'since') {
      f = (a, b) => (a.since === null) - (b.since === null) || (a.since || 0) - (b.since || 0);
    } else {
      const i = Number(sortKey.slice(1));
      // Rows without a value go last whichever way the column is sorted.
      return (a, b) => {
        const x = a.values.length > i ? a.values[i] : null;
        const y = b.values.length > i ? b.values[i] : null;
        if (x === null || y === null) return (x === null) - (y === null) || byName(a, b);
        return sortDir * (x - y) || byName(a, b);
      };
    }
    return (a, b) => sortDir * f(a, b) || byName(a, b);
  }

  // Filter, sort and draw the current page: the only step that grows with the node count. The
  // table holds one page of rows at a time, so 10,000 nodes cost a sort, not 10,000 rows of DOM.
  function update() {
    const t0 = performance.now();
    shown = rows.filter(keep);
    shown.sort(comparator());
    const pages = Math.max(1, Math.ceil(shown.length / perPage));
    if (page >= pages) page = pages - 1;
    renderTable();
    const ms = performance.now() - t0;
    stats.lastUpdateMs = ms;
    stats.maxUpdateMs = Math.max(stats.maxUpdateMs, ms);
  }

  function ruleHeader(rule) {
    const clearOp = rule.operator === '>' ? '\u2264' : '\u2265';
    return rule.name + ' ' + rule.operator + ' ' + fmtNum(rule.threshold) + ' (clear ' + clearOp +
        ' ' + fmtNum(rule.clearThreshold) + ')' +
        ('mean' in rule ? ' mean ' + fmtNum(rule.mean) : '');  // relativeTo: mean
  }

  function renderHead() {
    const head = $('head');
    const cols = [['name', 'node'], ['mark', 'mark'], ['state', 'state'], ['since', 'hot since']];
    (data ? data.rules : []).forEach((r, i) => cols.push(['v' + i, ruleHeader(r)]));
    const ths = cols.map(([key, label]) => {
      const th = el('th', label);
      th.dataset.key = key;
      th.tabIndex = 0;
      th.setAttribute('role', 'button');
      if (key === sortKey) th.className = sortDir > 0 ? 'sorted asc' : 'sorted desc';
      if (key[0] === 'v') th.title = 'error' in data.rules[Number(key.slice(1))] ?
          'query failed: ' + data.rules[Number(key.slice(1))].error : 'value of the last cycle';
      return th;
    });
    head.replaceChildren(...ths);
  }

  function valueClass(rule, v) {
    if (v === null) return 'none';
    const over = rule.operator === '>' ? v > rule.threshold : v < rule.threshold;
    if (over) return 'over';
    const cleared = rule.operator === '>' ? v <= rule.clearThreshold : v >= rule.clearThreshold;
    return cleared ? 'ok' : 'band';
  }

  function renderTable() {
    const t0 = performance.now();
    renderHead();
    const now = Date.now() / 1000;
    const start = page * perPage;
    const slice = shown.slice(start, start + perPage);
    const rules = data ? data.rules : [];
    const frag = document.createDocumentFragment();
    for (const r of slice) {
      const tr = document.createElement('tr');
      tr.dataset.node = r.name;
      tr.appendChild(el('td', r.name, 'name'));
      tr.appendChild(el('td', r.mark, r.ours ? 'mark ours' : r.mark ? 'mark foreign' : 'mark'));
      tr.appendChild(el('td', r.state, 'state ' + r.state));
      const since = el('td', r.since === null ? '' : fmtAgo(r.since, now), 'since');
      if (r.since !== null) since.title = new Date(r.since * 1000).toISOString();
      tr.appendChild(since);
      rules.forEach((rule, i) => {
        const v = r.values.length > i ? r.values[i] : null;
        const td = el('td', v === null ? '\u2013' : fmtNum(v), 'num ' + valueClass(rule, v));
        if (v !== null) td.title = String(v);
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    }
    $('rows').replaceChildren(frag);
    const pages = Math.max(1, Math.ceil(shown.length / perPage));
    $('count').textContent = shown.length + ' of ' + rows.length + ' nodes';
    $('page').textContent = 'page ' + (page + 1) + ' of ' + pages;
    $('prev').disabled = page === 0;
    $('next').disabled = page + 1 >= pages;
    stats.lastRenderMs = performance.now() - t0;
  }

  function card(label, value, cls, title) {
    const d = el('div', null, 'card' + (cls ? ' ' + cls : ''));
    d.appendChild(el('div', value, 'value'));
    d.appendChild(el('div', label, 'label'));
    if (title) d.title = title;
    return d;
  }

  function renderSummary() {
    const s = data;
    $('mark').textContent = s.mark;
    $('version').textContent = s.version;
    const status = $('status');
    status.textContent = s.ready ? 'ready' : 'not ready';
    status.className = 'pill ' + (s.ready ? 'good' : 'bad');
    status.title = s.notReady;
    $('updated').textContent = 'cycle ' + s.cycle + (s.evaluatedAt ? ' at ' + s.evaluatedAt : '');
    let capped = 0;
    let held = 0;
    for (const r of rows) {
      if (r.state === 'capped') ++capped;
      else if (r.state === 'held') ++held;
    }
    let leader = 'single replica';
    if (s.leaderElection)
      leader = s.leader ? 'this replica' : 'standby (' + (s.leaseHolder || 'nobody') + ' leads)';
    const cards = [
      card('managed nodes', rows.length),
      card('marked', s.markedNodes, s.markedNodes ? 'warm' : ''),
      card('hot', s.hotNodes),
      card('mark limit', s.markLimit, '', 'herd cap: at most this many nodes carry the mark'),
      card('capped', capped, capped ? 'warm' : '', 'hot, but left unmarked by the herd cap'),
      card('held', held, '', 'cold, but the rebalancer keeps the mark'),
      card('leader', leader, s.leader ? '' : 'warm', s.identity),
      card('Prometheus', s.allQueriesFailed ? 'down ' + Math.round(s.outageSeconds) + ' s' : 'answering',
          s.allQueriesFailed ? 'bad' : ''),
      card('rule file', s.reloadOk ? 'applied' : 'change refused', s.reloadOk ? '' : 'bad',
          s.reloadError),
    ];
    $('summary').replaceChildren(...cards);
    const notes = [];
    if (!s.ready) notes.push('Not ready: ' + s.notReady);
    if (s.allQueriesFailed)
      notes.push(s.releasing ? 'Every query fails: the marks are being released (onPrometheusDown: release).' :
                               'Every query fails: no mark is added or removed until Prometheus answers.');
    if (!s.reloadOk) notes.push('Rule file change refused (the running rules are kept): ' + s.reloadError);
    if (s.standby) notes.push('Standby: another replica holds the lease and decides; values are the leader\'s business.');
    for (const r of s.rules) if ('error' in r) notes.push('Rule ' + r.name + ': ' + r.error);
    const banner = $('banner');
    banner.replaceChildren(...notes.map((n) => el('p', n)));
    banner.hidden = notes.length === 0;
  }

  function renderChanges() {
    const frag = document.createDocumentFragment();
    for (const c of data.changes) {
      const tr = document.createElement('tr');
      tr.appendChild(el('td', c.at, 'at'));
      tr.appendChild(el('td', c.node, 'name'));
      tr.appendChild(el('td', c.change, 'change ' + c.change));
      tr.appendChild(el('td', c.reason, 'reason'));
      frag.appendChild(tr);
    }
    $('changes').replaceChildren(frag);
    $('no-changes').hidden = data.changes.length > 0;
  }

  function pct(v) { return typeof v === 'number' ? (100 * v).toFixed(0) + ' %' : String(v); }

  function renderRebalance(rb) {
    const section = $('rebalance-section');
    section.hidden = !rb || !rb.enabled;
    if (section.hidden) return;
    const f = rb.figures;
    $('figures').replaceChildren(
        card('episodes', f.episodes), card('evictions', f.evictions),
        card('replacements', f.replacements), card('bounce-backs', f.bounceBacks),
        card('discovery rate', pct(f.discoveryRate)), card('eviction rate', pct(f.evictionRate)),
        card('effectiveness', pct(f.effectiveness), '', 'episodes with evictions whose node cooled'),
        card('mode', rb.dryRun ? 'dry run' : 'evicting'));
    const nodes = document.createDocumentFragment();
    for (const n of rb.nodes) {
      const tr = document.createElement('tr');
      for (const v of [n.name, n.qualification, n.rule || '', n.load === undefined ? '' : fmtNum(n.load),
                       n.goal === undefined ? '' : fmtNum(n.goal), n.limitedBy || '', n.markHeld ? 'yes' : ''])
        tr.appendChild(el('td', v));
      nodes.appendChild(tr);
    }
    $('rb-nodes').replaceChildren(nodes);
    const ev = document.createDocumentFragment();
    for (let i = rb.evictions.length - 1; i >= 0; --i) {
      const e = rb.evictions[i];
      const tr = document.createElement('tr');
      for (const v of [e.at, e.pod, e.node, e.result, e.to, e.rule, fmtNum(e.usage)])
        tr.appendChild(el('td', v));
      ev.appendChild(tr);
    }
    $('evictions').replaceChildren(ev);
  }

  function setConnection(ok, text) {
    const c = $('connection');
    c.textContent = text;
    c.className = ok ? 'muted' : 'pill bad';
  }

  async function getJson(path) {
    const r = await fetch(path, {cache: 'no-store'});
    if (!r.ok) throw new Error(path + ': HTTP ' + r.status);
    return r.json();
  }

  let pollTimer = 0;
  let polling = false;
  async function poll() {
    clearTimeout(pollTimer);
    // A tab in the background fetches nothing (at 10,000 nodes a poll is half a megabyte); it
    // polls again at once when shown. One poll at a time: the one in flight schedules the next.
    if (document.hidden || polling) return;
    polling = true;
    try {
      const s = await getJson('/api/v1/state');
      const t0 = performance.now();
      data = s;
      rows = prepare(s);
      renderSummary();
      update();
      renderChanges();
      stats.lastRefreshMs = performance.now() - t0;
      if (s.rebalance) renderRebalance(await getJson('/rebalance'));
      else renderRebalance(null);
      stats.refreshes++;
      document.body.dataset.cycle = String(s.cycle);
      setConnection(true, 'updated ' + new Date().toLocaleTimeString());
    } catch (e) {
      stats.errors++;
      setConnection(false, 'cannot reach the controller (' + e.message + '); retrying');
    } finally {
      polling = false;
      pollTimer = setTimeout(poll, POLL_MS);
    }
  }
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) poll();
  });

  function sortBy(key) {
    if (sortKey === key) {
      sortDir = -sortDir;
    } else {
      sortKey = key;
      // Values and states read best hottest first.
      sortDir = key[0] === 'v' ? -1 : 1;
    }
    page = 0;
    update();
  }

  $('head').addEventListener('click', (e) => {
    const th = e.target.closest('th');
    if (th && th.dataset.key) sortBy(th.dataset.key);
  });
  $('head').addEventListener('keydown', (e) => {
    const th = e.target.closest('th');
    if (th && th.dataset.key && (e.key === 'Enter' || e.key === ' ')) {
      e.preventDefault();
      sortBy(th.dataset.key);
    }
  });
  $('filter').addEventListener('input', () => {
    // Debounced: typing a name does not sort 10,000 rows at every key stroke.
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      filterText = $('filter').value.trim().toLowerCase();
      page = 0;
      update();
    }, FILTER_DEBOUNCE_MS);
  });
  $('show').addEventListener('change', () => {
    show = $('show').value;
    page = 0;
    update();
  });
  $('per-page').addEventListener('change', () => {
    perPage = Number($('per-page').value);
    page = 0;
    update();
  });
  $('prev').addEventListener('click', () => {
    if (page > 0) --page;
    renderTable();
  });
  $('next').addEventListener('click', () => {
    ++page;
    update();
  });
  poll();
})();
)JS";

constexpr WebAsset kAssets[] = {
    {"/", "text/html; charset=utf-8", kIndexHtml},
    {"/ui/app.js", "text/javascript; charset=utf-8", kAppJs},
    {"/ui/app.css", "text/css; charset=utf-8", kAppCss},
};

}  // namespace

const WebAsset* FindWebAsset(std::string_view path) {
  for (const WebAsset& a : kAssets)
    if (a.path == path) return &a;
  return nullptr;
}

}  // namespace ds
