// Attention Lab: turns the compact payload written by core/bertviz_views.py into the `params`
// object that bertviz's own view scripts expect, and fits the drawing to the frame's width.
//
// Why a payload instead of bertviz's habit (string-replacing PYTHON_PARAMS with a JSON dump):
// the weights travel as base64 bytes (attention quantised to 1/255, the step at which a browser
// renders opacity; queries and keys as float16), which is 6-10x smaller than JSON numbers, and the
// data sits in a <script type="application/json"> block, never in executable text.
(function () {
  "use strict";
  var P = JSON.parse(document.getElementById("attnlab-payload").textContent);
  var L = P.L, H = P.H, T = P.T, D = P.D || 0;

  function bytes(b64) {
    var s = atob(b64), u = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
    return u;
  }
  function half(h) {  // IEEE 754 binary16 -> number
    var sign = (h & 0x8000) ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
    if (e === 0) return sign * Math.pow(2, -14) * (f / 1024);
    if (e === 31) return f ? NaN : sign * Infinity;
    return sign * Math.pow(2, e - 15) * (1 + f / 1024);
  }
  function range(a, b) { var r = []; for (var i = a; i < b; i++) r.push(i); return r; }

  var A = bytes(P.attn);  // L x H x T x T, uint8, weight = byte / 255
  function attn(rows, cols) {  // -> [layer][head][row][col]
    var out = [];
    for (var l = 0; l < L; l++) {
      var layer = [];
      for (var h = 0; h < H; h++) {
        var m = [], base = (l * H + h) * T;
        for (var r = 0; r < rows.length; r++) {
          var row = [], off = (base + rows[r]) * T;
          for (var c = 0; c < cols.length; c++) row.push(A[off + cols[c]] / 255);
          m.push(row);
        }
        layer.push(m);
      }
      out.push(layer);
    }
    return out;
  }
  function vectors(b64, rows) {  // L x H x T x D float16 -> [layer][head][row][dim]
    var u = bytes(b64), dv = new DataView(u.buffer), out = [];
    for (var l = 0; l < L; l++) {
      var layer = [];
      for (var h = 0; h < H; h++) {
        var m = [];
        for (var r = 0; r < rows.length; r++) {
          var v = [], off = ((l * H + h) * T + rows[r]) * D;
          for (var d = 0; d < D; d++) v.push(half(dv.getUint16(2 * (off + d), true)));
          m.push(v);
        }
        layer.push(m);
      }
      out.push(layer);
    }
    return out;
  }

  var tok = P.tokens, all = range(0, T);
  var a = P.b_start == null ? all : range(0, P.b_start);
  var b = P.b_start == null ? [] : range(P.b_start, T);
  function pick(idx) { return idx.map(function (i) { return tok[i]; }); }

  if (P.kind === "neuron") {
    var Q = function (rows) { return vectors(P.q, rows); };
    var K = function (rows) { return vectors(P.k, rows); };
    var att = {all: {attn: attn(all, all), left_text: tok, right_text: tok, queries: Q(all), keys: K(all)}};
    if (b.length) {
      att.aa = {attn: attn(a, a), left_text: pick(a), right_text: pick(a), queries: Q(a), keys: K(a)};
      att.ab = {attn: attn(a, b), left_text: pick(a), right_text: pick(b), queries: Q(a), keys: K(b)};
      att.ba = {attn: attn(b, a), left_text: pick(b), right_text: pick(a), queries: Q(b), keys: K(a)};
      att.bb = {attn: attn(b, b), left_text: pick(b), right_text: pick(b), queries: Q(b), keys: K(b)};
    }
    window.bertviz_params = {attention: att, default_filter: "all", root_div_id: P.root,
                             bidirectional: true, display_mode: "light", layer: P.layer, head: P.head};
  } else {
    // Same order as bertviz's own sentence filter: All, A->A, B->B, A->B, B->A.
    var list = [{name: b.length ? "All" : null, attn: attn(all, all), left_text: tok, right_text: tok}];
    if (b.length) {
      list.push({name: "A->A", attn: attn(a, a), left_text: pick(a), right_text: pick(a)});
      list.push({name: "B->B", attn: attn(b, b), left_text: pick(b), right_text: pick(b)});
      list.push({name: "A->B", attn: attn(a, b), left_text: pick(a), right_text: pick(b)});
      list.push({name: "B->A", attn: attn(b, a), left_text: pick(b), right_text: pick(a)});
    }
    var p = {attention: list, default_filter: "0", root_div_id: P.root, include_layers: range(0, L)};
    if (P.kind === "head") {
      p.layer = P.layer; p.heads = null;
    } else {
      p.display_mode = "light"; p.include_heads = range(0, H); p.total_heads = H;
    }
    window.__attnlab_params = p;
  }

  // Fit wide drawings (model view: 970 px; neuron view: about 1010 px) to the frame's width by
  // giving each new <svg> a viewBox; bertviz redraws on every control change, so watch for it.
  var NOMINAL = {model: null, neuron: 1010, head: null};
  function fit(svg) {
    if (svg.getAttribute("data-fitted")) return;
    var ws = svg.getAttribute("width") || "", h = parseFloat(svg.getAttribute("height"));
    var w = /%$/.test(ws) ? NOMINAL[P.kind] : parseFloat(ws);
    if (!(w > 0) || !(h > 0)) return;
    svg.setAttribute("data-fitted", "1");
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    svg.setAttribute("width", "100%");
    svg.removeAttribute("height");
    svg.style.maxWidth = w + "px";
    svg.style.height = "auto";
  }
  var vis = document.querySelector("#" + P.root + " #vis");
  new MutationObserver(function () {
    vis.querySelectorAll(":scope > svg").forEach(fit);
  }).observe(vis, {childList: true});

  // bertviz draws a few English words itself ("Heads", "Layers", "Layer 3, Head 5", "Softmax",
  // "No token selected"): put the reader's language in their place, now and after every redraw.
  var TEXT = P.text || {}, LH = P.layer_head || ["Layer", "Head"];
  var LAYER_HEAD = /^Layer (\d+), Head (\d+)$/, SEP = /[\u3400-\u9fff]/.test(LH[0]) ? "，" : ", ";
  function translate(root) {
    root.querySelectorAll("text, tspan").forEach(function (el) {
      if (el.children.length) return;
      var s = el.textContent, m, out = null;
      if (Object.prototype.hasOwnProperty.call(TEXT, s)) out = TEXT[s];
      else if ((m = LAYER_HEAD.exec(s))) out = LH[0] + " " + m[1] + SEP + LH[1] + " " + m[2];
      if (out !== null && out !== s) el.textContent = out;
    });
  }
  new MutationObserver(function () { translate(vis); })
    .observe(vis, {childList: true, subtree: true, characterData: true});
  translate(vis);
})();
