/* kbench item explorer: filters, search and paging over the rows inlined in #kb-data.
   No network, no libraries. Cells are built with textContent (item text is never parsed as HTML).
   The filters live in the URL hash (#relation=P19&correct=no&page=2) so a view can be linked;
   #status carries data-total / data-shown / data-page-rows for tests and scripts. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("kb-data").textContent);
  var columns = data.columns, rows = data.rows, PAGE = 50;
  var techniques = data.techniques || [];
  var at = {};
  columns.forEach(function (c, i) { at[c.key] = i; });
  var NAMES = { answers: "gold + aliases", gold_rank: "rank", frequency_bin: "bin", id: "id" };
  var state = { q: "", relation: "", bin: "", correct: "", technique: techniques[0] || "", page: 1 };

  function relationName(id) {
    var label = data.relations[id];
    return label ? id + " · " + label : String(id);
  }
  var haystack = rows.map(function (r) {
    var rel = at.relation !== undefined ? relationName(r[at.relation]) : "";
    return (JSON.stringify(r) + " " + rel).toLowerCase();
  });

  function correctOf(row, technique) {
    if (techniques.length) {
      var cell = row[at[technique]];
      return cell ? cell[1] : null;
    }
    return at.correct !== undefined ? row[at.correct] : null;
  }

  function keep(row, i) {
    if (state.q && haystack[i].indexOf(state.q.toLowerCase()) < 0) return false;
    if (state.relation && row[at.relation] !== state.relation) return false;
    if (state.bin && row[at.frequency_bin] !== state.bin) return false;
    if (!state.correct) return true;
    var ok = correctOf(row, state.technique);
    if (state.correct === "yes") return ok === true;
    if (state.correct === "no") return ok === false;
    var base = correctOf(row, "baseline");
    if (state.correct === "fixed") return base === false && ok === true;
    if (state.correct === "broken") return base === true && ok === false;
    return true;
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function select(name, label, options) {
    var wrap = el("label", {}, label + " ");
    var box = el("select", { id: "f-" + name });
    options.forEach(function (o) {
      var opt = el("option", { value: o[0] }, o[1]);
      box.appendChild(opt);
    });
    box.addEventListener("change", function () { state[name] = box.value; state.page = 1; update(); });
    wrap.appendChild(box);
    return wrap;
  }

  function counts(key) {
    var n = {};
    rows.forEach(function (r) { var v = r[at[key]]; if (v !== null && v !== undefined) n[v] = (n[v] || 0) + 1; });
    return n;
  }

  function buildControls() {
    var box = document.getElementById("controls");
    var search = el("input", { id: "f-q", type: "search", placeholder: "search subject, prompt, answer…" });
    search.addEventListener("input", function () { state.q = search.value; state.page = 1; update(); });
    box.appendChild(search);
    if (at.relation !== undefined) {
      var n = counts("relation");
      var ids = Object.keys(n).sort();
      box.appendChild(select("relation", "relation", [["", "all (" + ids.length + ")"]].concat(
        ids.map(function (id) { return [id, relationName(id) + " (n=" + n[id] + ")"]; }))));
    }
    if (data.bins.length) {
      var b = counts("frequency_bin");
      box.appendChild(select("bin", "frequency bin", [["", "all"]].concat(
        data.bins.map(function (x) { return [x, x + " (n=" + b[x] + ")"]; }))));
    }
    if (techniques.length) {
      box.appendChild(select("technique", "technique", techniques.map(function (t) { return [t, t]; })));
    }
    var outcomes = [["", "all"], ["yes", "correct"], ["no", "incorrect"]];
    if (techniques.length > 1) outcomes.push(["fixed", "fixed vs baseline (gain)"], ["broken", "broken vs baseline (loss)"]);
    if (techniques.length || at.correct !== undefined) box.appendChild(select("correct", "outcome", outcomes));
  }

  function cell(column, value) {
    var td = el("td");
    if (value === null || value === undefined || value === "") {
      td.className = "none";
      td.textContent = "—";
    } else if (column.kind === "bool") {
      td.className = value ? "ok" : "bad";
      td.textContent = value ? "✓" : "✗";
    } else if (column.kind === "answer") {
      td.className = "answer " + (value[1] ? "ok" : "bad");
      td.appendChild(el("span", { class: "mark" }, value[1] ? "✓ " : "✗ "));
      td.appendChild(el("span", { class: "text", title: String(value[0]) }, value[0] === null ? "—" : String(value[0])));
      if (value[2] !== null && value[2] !== undefined) td.appendChild(el("span", { class: "rank" }, " rank " + value[2]));
      if (column.key === state.technique) td.className += " chosen";
    } else if (column.key === "relation") {
      td.appendChild(el("span", { class: "rel" }, String(value)));
      if (data.relations[value]) td.appendChild(el("span", { class: "rel-label" }, " · " + data.relations[value]));
    } else {
      var text = Array.isArray(value) ? value.join(" | ") : String(value);
      td.textContent = text;
      if (text.length > 60) { td.className = "long"; td.title = text; }
    }
    return td;
  }

  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    Object.keys(state).forEach(function (k) {
      if (params.has(k)) state[k] = k === "page" ? Math.max(1, parseInt(params.get(k), 10) || 1) : params.get(k);
    });
    ["q", "relation", "bin", "technique", "correct"].forEach(function (k) {
      var box = document.getElementById("f-" + k);
      if (box) box.value = state[k];
    });
  }

  function writeHash() {
    var params = new URLSearchParams();
    Object.keys(state).forEach(function (k) { if (state[k] && !(k === "page" && state[k] === 1)) params.set(k, state[k]); });
    var hash = params.toString();
    if (location.hash.replace(/^#/, "") !== hash) {
      try { history.replaceState(null, "", hash ? "#" + hash : location.pathname); } catch (e) { /* some file:// settings refuse; the view still works */ }
    }
  }

  function pagerButton(label, page, pages) {
    var button = el("button", { type: "button" }, label);
    button.disabled = page < 1 || page > pages || page === state.page;
    button.addEventListener("click", function () { state.page = page; update(); });
    return button;
  }

  function update() {
    var shown = [];
    for (var i = 0; i < rows.length; i++) if (keep(rows[i], i)) shown.push(rows[i]);
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    state.page = Math.min(state.page, pages);
    var start = (state.page - 1) * PAGE, slice = shown.slice(start, start + PAGE);
    var body = document.querySelector("#items tbody");
    var fresh = el("tbody");
    slice.forEach(function (row) {
      var tr = el("tr");
      columns.forEach(function (c, j) { tr.appendChild(cell(c, row[j])); });
      fresh.appendChild(tr);
    });
    body.parentNode.replaceChild(fresh, body);
    var status = document.getElementById("status");
    status.setAttribute("data-total", rows.length);
    status.setAttribute("data-shown", shown.length);
    status.setAttribute("data-page-rows", slice.length);
    status.textContent = shown.length ? "Showing " + (start + 1) + "–" + (start + slice.length) + " of " + shown.length +
      (shown.length === 1 ? " item" : " items") + (shown.length < rows.length ? " (filtered from " + rows.length + ")" : "") : "No item matches.";
    var pager = document.getElementById("pager");
    pager.textContent = "";
    [["« first", 1], ["‹ prev", state.page - 1]].forEach(function (b) { pager.appendChild(pagerButton(b[0], b[1], pages)); });
    pager.appendChild(el("span", {}, " page " + state.page + " of " + pages + " "));
    [["next ›", state.page + 1], ["last »", pages]].forEach(function (b) { pager.appendChild(pagerButton(b[0], b[1], pages)); });
    writeHash();
  }

  var head = el("tr");
  columns.forEach(function (c) { head.appendChild(el("th", { class: c.kind }, NAMES[c.key] || c.key)); });
  document.querySelector("#items thead").appendChild(head);
  buildControls();
  readHash();
  window.addEventListener("hashchange", function () { readHash(); update(); });
  update();
})();
