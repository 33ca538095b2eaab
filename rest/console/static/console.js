// Scrapy Cluster console: page refresh, live results, the API console and
// small form helpers. Plain JavaScript, no library.
(function () {
  'use strict';

  var main = document.getElementById('content');

  // Pages with data-refresh reload their content every so many seconds,
  // unless the operator is typing in one of its fields.
  function startRefresh() {
    var every = main && Number(main.getAttribute('data-refresh'));
    if (!every) return;
    var stamp = document.getElementById('refreshed');
    setInterval(function () {
      if (document.hidden) return;
      var active = document.activeElement;
      if (active && main.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) return;
      fetch(location.href, { headers: { 'X-Console-Partial': '1' }, credentials: 'same-origin', cache: 'no-store' })
        .then(function (res) {
          if (!res.ok) throw new Error('HTTP ' + res.status);
          return res.text();
        })
        .then(function (html) {
          main.innerHTML = html;
          if (stamp) stamp.textContent = 'Refreshed at ' + new Date().toLocaleTimeString();
        })
        .catch(function (err) {
          if (stamp) stamp.textContent = 'Refresh failed (' + err.message + '); retrying';
        });
    }, every * 1000);
  }

  // Forms with data-confirm ask first.
  document.addEventListener('submit', function (ev) {
    var msg = ev.target.getAttribute && ev.target.getAttribute('data-confirm');
    if (msg && !window.confirm(msg)) ev.preventDefault();
  });

  // The Submit form's expires helpers: now plus so many seconds.
  document.addEventListener('click', function (ev) {
    var add = ev.target.getAttribute && ev.target.getAttribute('data-expires-in');
    if (!add) return;
    var input = document.getElementById('f-expires');
    if (input) input.value = String(Math.floor(Date.now() / 1000) + Number(add));
  });

  function cell(row, text, cls) {
    var td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
  }

  // The Live page: results streamed from /ui/live/events.
  function startLive() {
    var table = document.getElementById('live');
    if (!table || !window.EventSource) return;
    var rows = document.getElementById('live-rows');
    var count = document.getElementById('live-count');
    var conn = document.getElementById('live-conn');
    var shown = 0;
    var source = new EventSource(table.getAttribute('data-events'));
    source.onopen = function () { conn.className = 'dot up'; conn.textContent = 'connected'; };
    source.onerror = function () { conn.className = 'dot down'; conn.textContent = 'reconnecting'; };
    source.addEventListener('result', function (ev) {
      var r = JSON.parse(ev.data);
      var tr = document.createElement('tr');
      tr.setAttribute('data-seq', r.seq);
      tr.setAttribute('data-crawlid', r.crawlid);
      cell(tr, r.timestamp);
      cell(tr, String(r.status_code), 'n status s' + r.status_code);
      cell(tr, r.url, 'url');
      cell(tr, r.crawlid);
      cell(tr, r.appid);
      tr.setAttribute('data-time', r.timestamp);
      // Newest on top by the crawler's timestamp (ISO 8601 UTC: it sorts
      // as text), not by arrival: partitions deliver out of time order.
      var at = rows.firstChild;
      while (at && at.getAttribute('data-time') > r.timestamp) at = at.nextSibling;
      rows.insertBefore(tr, at);
      while (rows.children.length > 500) rows.removeChild(rows.lastChild);
      shown++;
      count.textContent = String(shown);
    });
    source.addEventListener('status', function (ev) {
      var st = JSON.parse(ev.data);
      document.getElementById('live-state').textContent = st.state + (st.partitions ? ' (' + st.partitions + ' partition(s))' : '');
      document.getElementById('live-read').textContent = String(st.read);
      document.getElementById('live-streams').textContent = String(st.streams);
    });
    window.addEventListener('pagehide', function () { source.close(); });
  }

  // The API console: send to /feed or /poll through /ui/api, then poll.
  function startAPI() {
    var form = document.getElementById('api-form');
    if (!form) return;
    var answers = document.getElementById('api-answers');
    var polling = null;
    // Answers longer than this are folded: their first lines, then the rest on demand.
    var foldLines = 40, foldChars = 6000, previewLines = 20;

    function show(title, code, answer) {
      if (answers.querySelector('p.muted')) answers.innerHTML = '';
      var box = document.createElement('div');
      box.className = 'answer';
      var head = document.createElement('strong');
      head.textContent = title + ' → ' + code;
      var text = typeof answer === 'string' ? answer : JSON.stringify(answer, null, 2);
      var lines = text.split('\n');
      box.appendChild(head);
      var pre = document.createElement('pre');
      if (lines.length <= foldLines && text.length <= foldChars) {
        pre.textContent = text;
        box.appendChild(pre);
      } else {
        // A long answer shows its start; the whole of it is one click away.
        pre.className = 'preview';
        pre.textContent = lines.slice(0, previewLines).join('\n').slice(0, foldChars) + '\n…';
        box.appendChild(pre);
        var more = document.createElement('details');
        var summary = document.createElement('summary');
        summary.textContent = 'Show the whole answer (' + lines.length + ' lines, ' + text.length + ' characters)';
        var whole = document.createElement('pre');
        whole.textContent = text;
        more.appendChild(summary);
        more.appendChild(whole);
        more.addEventListener('toggle', function () { pre.hidden = more.open; });
        box.appendChild(more);
      }
      answers.insertBefore(box, answers.firstChild);
    }

    function send(path, body) {
      return fetch('/ui/api', {
        method: 'POST', credentials: 'same-origin', cache: 'no-store',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ path: path, body: body })
      }).then(function (res) { return res.json(); });
    }

    function poll(id, left) {
      polling = setTimeout(function () {
        send('/poll', JSON.stringify({ poll_id: id })).then(function (out) {
          if (out.code === 404 && left > 1) {
            poll(id, left - 1);
            return;
          }
          show('POST /poll ' + id, out.code, out.answer);
        });
      }, 2000);
    }

    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      if (polling) clearTimeout(polling);
      var path = document.getElementById('api-path').value;
      var body = document.getElementById('api-body').value;
      send(path, body).then(function (out) {
        show('POST ' + path, out.code, out.error ? out.error : out.answer);
        if (out.poll_id && document.getElementById('api-autopoll').checked) poll(out.poll_id, 30);
      }).catch(function (err) { show('POST ' + path, 'failed', String(err)); });
    });
  }

  startRefresh();
  startLive();
  startAPI();
})();
