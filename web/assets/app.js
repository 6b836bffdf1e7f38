'use strict';
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

  // A value in its rule's unit (the server's common/value_format.h, in the same words): percent,
  // bytes (binary prefixes), cores, seconds, or a plain number with an SI prefix.
  function fmtVal(v, unit) {
    if (v === null || v === undefined) return '';
    const short = x => String(Number(x.toFixed(Math.abs(x) >= 1000 ? 0 : Math.abs(x) >= 100 ? 1 : 2)));
    switch (unit) {
      case 'percent': return short(v) + ' %';
      case 'seconds': return short(v) + ' s';
      case 'cores': return short(v) + (v === 1 ? ' core' : ' cores');
      case 'bytes': {
        const p = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
        let x = v, i = 0;
        while (i < 4 && Math.abs(x) >= 1024) { x /= 1024; ++i; }
        return short(x) + ' ' + p[i];
      }
      default: {  // SI prefixes from 10,000 up
        const p = ['', ' k', ' M', ' G', ' T'];
        let x = v, i = 0;
        if (Math.abs(x) >= 1e4) while (i < 4 && Math.abs(x) >= 1000) { x /= 1000; ++i; }
        return short(x) + p[i];
      }
    }
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
  const stats = {refreshes: 0, lastUpdateMs: 0, lastRenderMs: 0, maxUpdateMs: 0, errors: 0,
                 historyLoads: 0, lastHistoryMs: 0, tokenAsked: 0};
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
        // "n/a" (another pool's rule) sorts with the rows without a value.
        const x = typeof a.values[i] === 'number' ? a.values[i] : null;
        const y = typeof b.values[i] === 'number' ? b.values[i] : null;
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
    return rule.name + ' ' + rule.operator + ' ' + fmtVal(rule.threshold, rule.unit) + ' (clear ' +
        clearOp + ' ' + fmtVal(rule.clearThreshold, rule.unit) + ')' +
        ('mean' in rule ? ' mean ' + fmtVal(rule.mean, rule.unit) : '') +  // relativeTo: mean
        ('warmingUp' in rule ? ' \u2014 warming up, ' + rule.warmingUp : '');  // predict: history
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
        let td;
        if (v === 'n/a') {  // the rule's nodeSelector leaves this node out: not missing data
          td = el('td', 'n/a', 'num na');
          td.title = 'not in this rule\'s pool (its nodeSelector)';
        } else {
          td = el('td', v === null ? '\u2013' : fmtVal(v, rule.unit), 'num ' + valueClass(rule, v));
          if (v !== null) td.title = String(v);
        }
        const line = sparkFor(r.name, rule.name);
        if (line) td.appendChild(line);
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
    queueHistory();
  }

  // History (GET /api/v1/history): the last hour of the rows on this page, and the cluster's
  // last hours. Asked for the rows shown only (the hour of 10,000 nodes would be megabytes), again
  // when they change and otherwise every HISTORY_MS: a point is a minute.
  const HISTORY_MS = 20000;
  const SVG_NS = 'http://www.w3.org/2000/svg';
  let hist = null;  // the last answer: {start, stepSeconds, rules, nodes, cluster}
  let histKey = '';
  let histAt = 0;
  let histLoading = false;
  let histTimer = 0;

  function svgEl(tag, attrs, cls) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (cls) e.setAttribute('class', cls);
    return e;
  }

  // A path through the non-null values, lifted at gaps (a minute without a cycle or a value).
  function pathOf(values, x, y) {
    let d = '';
    let pen = false;
    values.forEach((v, k) => {
      if (v === null || v === undefined) {
        pen = false;
        return;
      }
      d += (pen ? 'L' : 'M') + x(k).toFixed(1) + ' ' + y(v).toFixed(1);
      pen = true;
    });
    return d;
  }

  function lastOf(a) {
    for (let k = a.length - 1; k >= 0; --k) if (a[k] !== null) return k;
    return -1;
  }

  function firstOf(a) {
    for (let k = 0; k < a.length; ++k) if (a[k] !== null) return k;
    return -1;
  }

  // A node's last hour for one rule: its line, the threshold (red) and the clear threshold
  // (grey), scaled so that all three show.
  function spark(values, rule) {
    const k = lastOf(values);
    if (k < 0) return null;
    const nums = values.filter((v) => v !== null);
    const lines = rule.threshold.concat(rule.clearThreshold).filter((v) => v !== null);
    let lo = Math.min(...nums, ...lines);
    let hi = Math.max(...nums, ...lines);
    if (hi === lo) { hi += 1; lo -= 1; }
    // The time axis starts where the rule's history does (the same for every row, so the lines
    // compare): a controller up for ten minutes draws ten minutes across, not in the last sixth.
    const from = Math.max(0, Math.min(firstOf(rule.threshold), firstOf(values), values.length - 10));
    const W = 60, H = 16, n = values.length - from;
    const x = (i) => ((i - from) * W) / (n - 1);
    const y = (v) => H - ((v - lo) / (hi - lo)) * H;
    const svg = svgEl('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img'}, 'spark');
    svg.setAttribute('aria-label', 'last hour of ' + rule.name + ': ' + fmtVal(Math.min(...nums), rule.unit) +
                     ' to ' + fmtVal(Math.max(...nums), rule.unit));
    const part = (a) => a.map((v, i) => (i < from ? null : v));
    for (const [line, cls] of [[rule.clearThreshold, 'clr'], [rule.threshold, 'thr'], [values, 'line']]) {
      const d = pathOf(part(line), x, y);
      if (d) svg.appendChild(svgEl('path', {d: d}, cls));
    }
    svg.appendChild(svgEl('circle', {cx: x(k).toFixed(1), cy: y(values[k]).toFixed(1), r: 1.5}, 'now'));
    return svg;
  }

  function sparkFor(node, ruleName) {
    // Own keys only: a node may be called "constructor" (JSON objects inherit Object's).
    if (!hist || !Object.hasOwn(hist.nodes, node)) return null;
    const i = hist.rules.findIndex((r) => r.name === ruleName);
    const series = hist.nodes[node];
    return i < 0 || i >= series.length ? null : spark(series[i], hist.rules[i]);
  }

  function queueHistory() {
    clearTimeout(histTimer);
    histTimer = setTimeout(() => loadHistory(false), 300);
  }

  async function loadHistory(force) {
    if (histLoading || document.hidden || !data) return;
    const start = page * perPage;
    const names = shown.slice(start, start + perPage).map((r) => r.name);
    const key = names.join(',');
    if (!force && key === histKey && Date.now() - histAt < HISTORY_MS) return;
    histLoading = true;
    const t0 = performance.now();
    try {
      // Under the server's 16 KB request limit: a request per 6,000 characters of names.
      const chunks = [[]];
      let len = 0;
      for (const n of names) {
        const e = encodeURIComponent(n);
        if (len + e.length > 6000) { chunks.push([]); len = 0; }
        chunks[chunks.length - 1].push(e);
        len += e.length + 1;
      }
      let next = null;
      for (const c of chunks) {
        const h = await getJson('/api/v1/history?nodes=' + c.join(','));
        if (next) Object.assign(next.nodes, h.nodes);
        else next = h;
      }
      hist = next;
      histKey = key;
      histAt = Date.now();
      renderTable();
      renderCluster();
      stats.lastHistoryMs = performance.now() - t0;  // fetch, parse and draw
      stats.historyLoads++;
    } catch (e) {
      // A 401 or 403 here is the next poll's to ask about.
      if (e.status !== 401 && e.status !== 403) stats.errors++;
    } finally {
      histLoading = false;
    }
  }

  // The cluster's last hours: nodes marked and hot (the most of each minute) on the left scale,
  // evictions per minute as bars on the right one.
  function renderCluster() {
    const box = $('cluster-chart');
    const c = hist && hist.cluster;
    const n = c ? c.marked.length : 0;
    if (n < 2 || lastOf(c.marked) < 0) {
      box.replaceChildren(el('p', 'No cycle has run yet.', 'muted'));
      return;
    }
    // Drawn at the box's own width, one unit a pixel, so the text keeps its size. The time axis
    // runs from the first minute with a cycle (at least the last 30) to now.
    const W = Math.max(320, box.clientWidth - 16), H = 140, L = 36, R = 44, T = 8, B = 18;
    const from = Math.min(firstOf(c.marked), n - 30);
    const span = n - 1 - from;
    const vals = (a) => a.filter((v) => v !== null);
    const maxN = Math.max(1, ...vals(c.marked), ...vals(c.hot));
    const maxE = Math.max(1, ...vals(c.evictions));
    const x = (k) => L + ((k - from) * (W - L - R)) / span;
    const ago = (m) => (m >= 120 ? '-' + Math.round(m / 60) + ' h' : '-' + m + ' min');
    const yN = (v) => T + (1 - v / maxN) * (H - T - B);
    const yE = (v) => T + (1 - v / maxE) * (H - T - B);
    const svg = svgEl('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'marked nodes, hot nodes and evictions, last 6 hours'});
    svg.appendChild(svgEl('line', {x1: L, x2: W - R, y1: H - B, y2: H - B}, 'axis'));
    const text = (s, tx, ty, anchor) => {
      const t = svgEl('text', {x: tx, y: ty, 'text-anchor': anchor});
      t.textContent = s;
      svg.appendChild(t);
    };
    text(String(maxN), L - 4, T + 10, 'end');
    text('0', L - 4, H - B, 'end');
    text(maxE + '/min', W - R + 4, T + 10, 'start');
    text(ago(span), L, H - 4, 'start');
    text(ago(Math.round(span / 2)), L + (W - L - R) / 2, H - 4, 'middle');
    text('now', W - R, H - 4, 'end');
    c.evictions.forEach((v, k) => {
      if (!v || k < from) return;
      const bar = svgEl('rect', {x: (x(k) - 1).toFixed(1), y: yE(v).toFixed(1), width: 2,
                                 height: (H - B - yE(v)).toFixed(1)}, 'evictions');
      const title = svgEl('title');
      title.textContent = new Date((c.start + 60 * k) * 1000).toLocaleTimeString() + ': ' + v + ' evicted';
      bar.appendChild(title);
      svg.appendChild(bar);
    });
    for (const [series, cls] of [[c.hot, 'hot'], [c.marked, 'marked']]) {
      const d = pathOf(series.map((v, k) => (k < from ? null : v)), x, yN);
      if (d) svg.appendChild(svgEl('path', {d: d}, cls));
    }
    box.replaceChildren(svg);
    const k = lastOf(c.marked);
    const evicted = vals(c.evictions).reduce((a, b) => a + b, 0);
    $('cluster-note').textContent = '\u00b7 now ' + c.marked[k] + ' marked' +
        (c.hot[k] === null ? '' : ', ' + c.hot[k] + ' hot') + '; ' + evicted + ' evicted in ' +
        ago(span).slice(1);
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
    renderReliefEffect(rb.figures);
    const nodes = document.createDocumentFragment();
    for (const n of rb.nodes) {
      const tr = document.createElement('tr');
      for (const v of [n.name, n.qualification, n.rule || '', n.load === undefined ? '' : fmtVal(n.load, n.unit),
                       n.goal === undefined ? '' : fmtVal(n.goal, n.unit), n.limitedBy || '', n.markHeld ? 'yes' : ''])
        tr.appendChild(el('td', v));
      nodes.appendChild(tr);
    }
    $('rb-nodes').replaceChildren(nodes);
    const ev = document.createDocumentFragment();
    for (let i = rb.evictions.length - 1; i >= 0; --i) {
      const e = rb.evictions[i];
      const tr = document.createElement('tr');
      for (const v of [e.at, e.pod, e.node, e.result, e.to, e.rule, fmtVal(e.usage, e.unit)])
        tr.appendChild(el('td', v));
      ev.appendChild(tr);
    }
    $('evictions').replaceChildren(ev);
  }

  function fmtDuration(s) {
    s = Math.round(s);
    if (s < 60) return s + ' s';
    const m = Math.floor(s / 60);
    if (m < 60) return m + ' min' + (s % 60 ? ' ' + (s % 60) + ' s' : '');
    return Math.floor(m / 60) + ' h' + (m % 60 ? ' ' + (m % 60) + ' min' : '');
  }

  // How the relief went (/rebalance's figures): time to relief, bounce-back ratio, evictions per
  // relieved episode and hot node-minutes, as /metrics has them.
  function renderReliefEffect(f) {
    const t = f.timeToRelief;
    // The least bound that holds the share q of the relieved episodes (the buckets are cumulative).
    const within = (q) => {
      for (const b of t.buckets) if (b.count >= q * t.count) return '\u2264 ' + fmtDuration(b.le);
      return '> ' + fmtDuration(t.buckets[t.buckets.length - 1].le);
    };
    const relieved = t.count > 0;
    $('relief-effect').replaceChildren(
        card('time to relief', relieved ? fmtDuration(t.sumSeconds / t.count) : '\u2013', '',
            'mean over ' + t.count + ' relieved episodes: from the node\'s mark to the first cycle ' +
            'at or below its clear threshold' + (relieved ? '; half within ' + within(0.5) : '')),
        card('90 % relieved within', relieved ? within(0.9) : '\u2013', '',
            'of the relieved episodes, from the mark (the histogram\'s bounds)'),
        card('bounce-back ratio', pct(f.bounceBackRatio), f.bounceBackRatio > 0.2 ? 'warm' : '',
            f.bounceBacks + ' of ' + f.replacements + ' replacements bound to the node their pod left'),
        card('evictions per relief', relieved ? Number(f.evictionsPerRelievedEpisode.toFixed(1)) : '\u2013',
            '', f.relievedEvictions + ' evictions in ' + f.episodesRelieved + ' relieved episodes'),
        card('hot node-minutes', fmtNum(f.hotNodeSeconds / 60), '',
            'marked nodes not yet at or below their clear threshold, summed over the cycles'));
  }

  // Explain (GET /explain): why a pod moved or stayed, why a node is (not) relieved, as the
  // cycle decided it. A pod is "namespace/name", anything else a node.
  function explainRows(rows) {
    const t = document.createElement('table');
    t.className = 'grid';
    const body = document.createElement('tbody');
    for (const r of rows) {
      const tr = document.createElement('tr');
      for (const v of r) tr.appendChild(el('td', v === undefined ? '' : String(v)));
      body.appendChild(tr);
    }
    t.appendChild(body);
    return t;
  }

  function explainNode(n) {
    const box = document.createDocumentFragment();
    box.appendChild(el('p', 'Node ' + n.node + (n.state ? ' (' + n.state + ')' : '') + ': ' + n.because,
                       'explain-verdict'));
    if (n.rules && n.rules.length)
      box.appendChild(explainRows(n.rules.map((r) => [
        'rule ' + r.rule, fmtVal(r.value, r.unit), r.op + ' ' + fmtVal(r.threshold, r.unit) + ' marks',
        'clears at ' + fmtVal(r.clearThreshold, r.unit)])));
    if (n.relief)
      box.appendChild(el('p', 'relief: ' + n.relief.qualification +
                              (n.relief.limitedBy ? ', limited by ' + n.relief.limitedBy : '')));
    if (n.pods) {
      box.appendChild(el('p', 'Its pods, as the cycle of ' + n.decided + ' took them' +
                              (n.destinations && n.destinations.length
                                   ? ' (replacements looked for on ' + n.destinations.join(', ') + ')' : '')));
      box.appendChild(explainRows(n.pods.map((p) => [
        p.order || '', p.pod, p.verdict, p.reason + (p.to ? ' \u2192 ' + p.to : ''), p.because])));
    }
    return box;
  }

  function explainPod(d) {
    const box = document.createDocumentFragment();
    const dec = d.decision;
    if (dec) {
      box.appendChild(el('p', 'Pod ' + d.pod + ': ' + dec.verdict + ' (' + dec.reason + '): ' + dec.because,
                         'explain-verdict ' + dec.verdict));
      const checks = dec.checks.filter((c) => c.result !== 'not_reached')
          .map((c) => c.check + (c.result === 'passed' ? ' \u2713' : ': ' + c.reason)).join(' \u00b7 ');
      box.appendChild(el('p', 'checks: ' + checks, 'muted'));
      if (dec.detail) box.appendChild(el('p', dec.detail));
      if (dec.change) box.appendChild(el('p', 'To change it: ' + dec.change));
    } else {
      box.appendChild(el('p', 'Pod ' + d.pod + ': ' + (d.because || 'see its last eviction'),
                         'explain-verdict'));
    }
    if (d.eviction) {
      const e = d.eviction;
      box.appendChild(el('p', 'Last eviction ' + e.at + ' from ' + e.node + ': ' + e.result + ', rule ' + e.rule +
                              ' at ' + fmtVal(e.load, e.unit) + ', goal ' + fmtVal(e.goal, e.unit) +
                              (e.to ? ', replacement to ' + e.to : '') + ' (' + d.evictionBecause + ')'));
    }
    if (d.nodeState) box.appendChild(explainNode(d.nodeState));
    return box;
  }

  async function explain(what) {
    what = what.trim();
    if (!what) return;
    $('explain-what').value = what;
    const out = $('explain-result');
    out.hidden = false;
    const q = what.includes('/') ? 'pod=' + encodeURIComponent(what) : 'node=' + encodeURIComponent(what);
    try {
      const token = storedToken();
      const r = await fetch('/explain?' + q, {cache: 'no-store',
                                             headers: token ? {Authorization: 'Bearer ' + token} : {}});
      const d = await r.json();
      if (d.error) out.replaceChildren(el('p', d.error, 'explain-verdict stays'));
      else out.replaceChildren(d.pod ? explainPod(d) : explainNode(d));
    } catch (e) {
      out.replaceChildren(el('p', 'explain: ' + e.message, 'explain-verdict stays'));
    }
  }

  $('explain-form').addEventListener('submit', (e) => {
    e.preventDefault();
    explain($('explain-what').value);
  });
  // A marked node's name and an evicted pod's name explain themselves when clicked.
  $('rb-nodes').addEventListener('click', (e) => {
    const td = e.target.closest('td');
    if (td && td.cellIndex === 0) explain(td.textContent);
  });
  $('evictions').addEventListener('click', (e) => {
    const td = e.target.closest('td');
    if (td && td.cellIndex === 1) explain(td.textContent);
  });

  function setConnection(ok, text) {
    const c = $('connection');
    c.textContent = text;
    c.className = ok ? 'muted' : 'pill bad';
  }

  // -web_auth=kubernetes: the controller answers the page's data requests 401 without a bearer
  // token the API server accepts, and 403 when the token's user may not read a path. The page then
  // asks for a token and polls nothing until it has one. The token is kept in this tab's
  // sessionStorage only (not localStorage, not a cookie: it goes with the tab, and no request of
  // another site can carry it) and sent as Authorization with each of the page's requests.
  const TOKEN_KEY = 'dynamic-scheduler.token';
  let waitingForToken = false;

  function storedToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch (e) {  // storage disabled: no token can be kept
      return '';
    }
  }

  function storeToken(token) {
    try {
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) {
      // storage disabled: the token is not kept, and the page asks again
    }
    $('auth-forget').hidden = !storedToken();
  }

  function askForToken(status, path) {
    waitingForToken = true;
    const had = storedToken() !== '';
    let text = 'This controller asks for a Kubernetes bearer token (-web_auth=kubernetes).';
    if (status === 403)
      text = 'The token\'s user may not get ' + path + ' (403): paste a token whose user may read this page.';
    else if (had)
      text = 'The API server does not accept this token (401; expired?): paste a new one.';
    $('auth-message').textContent = text;
    $('auth').className = status === 403 || had ? 'auth refused' : 'auth';
    $('auth').hidden = false;
    $('auth-token').focus();
    setConnection(false, status === 403 ? 'not allowed (403)' : 'a bearer token is needed (401)');
  }

  $('auth-form').addEventListener('submit', (e) => {
    e.preventDefault();  // nothing is submitted anywhere (the page's CSP: form-action 'none')
    const token = $('auth-token').value.trim().replace(/^bearer\s+/i, '');
    if (!token) return;
    if (!/^[\x21-\x7e]+$/.test(token)) {  // an HTTP header carries no such token
      $('auth-message').textContent = 'That is not a bearer token (spaces or characters a token has not).';
      $('auth').className = 'auth refused';
      return;
    }
    $('auth-token').value = '';
    storeToken(token);
    $('auth').hidden = true;
    waitingForToken = false;
    poll();
  });
  $('auth-forget').addEventListener('click', () => {
    storeToken('');
    waitingForToken = false;
    poll();
  });
  storeToken(storedToken());

  async function getJson(path) {
    const token = storedToken();
    const r = await fetch(path, {cache: 'no-store',
                                 headers: token ? {Authorization: 'Bearer ' + token} : {}});
    if (!r.ok) {
      const e = new Error(path + ': HTTP ' + r.status);
      e.status = r.status;
      e.path = path.split('?')[0];
      throw e;
    }
    return r.json();
  }

  let pollTimer = 0;
  let polling = false;
  async function poll() {
    clearTimeout(pollTimer);
    // A tab in the background fetches nothing (at 10,000 nodes a poll is half a megabyte); it
    // polls again at once when shown. One poll at a time: the one in flight schedules the next.
    // Nothing either while the page waits for a token.
    if (document.hidden || polling || waitingForToken) return;
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
      loadHistory(false);
      stats.refreshes++;
      document.body.dataset.cycle = String(s.cycle);
      setConnection(true, 'updated ' + new Date().toLocaleTimeString());
    } catch (e) {
      if (e.status === 401 || e.status === 403) {
        stats.tokenAsked++;
        askForToken(e.status, e.path);
      } else {
        stats.errors++;
        setConnection(false, 'cannot reach the controller (' + e.message + '); retrying');
      }
    } finally {
      polling = false;
      if (!waitingForToken) pollTimer = setTimeout(poll, POLL_MS);
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
