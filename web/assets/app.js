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
        const td = el('td', v === null ? '\u2013' : fmtVal(v, rule.unit), 'num ' + valueClass(rule, v));
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
