// In-page helpers for tests/test_browser.py, installed with page.add_init_script
// (so they survive reloads). Everything lives on window.__gxt.
//
// An explorer is the element with class `gx-explorer` (the explorer's contract); until
// that lands, the output area holding a widget tab bar stands in for it.
(() => {
  if (window.__gxt) return;
  const T = {};
  window.__gxt = T;

  const round = (v) => Math.round(v * 10) / 10;
  const rect = (e) => {
    const b = e.getBoundingClientRect();
    return { left: round(b.left), top: round(b.top), right: round(b.right), bottom: round(b.bottom),
             width: round(b.width), height: round(b.height) };
  };
  T.rect = rect;
  const describe = (e) => {
    if (!e) return 'nothing (outside the window)';
    const cls = typeof e.className === 'string' ? e.className : '';
    const text = (e.textContent || '').trim().slice(0, 40);
    return `<${e.tagName.toLowerCase()} class="${cls.slice(0, 120)}">` + (text ? ` "${text}"` : '');
  };
  T.describe = describe;

  // ------------------------------------------------------------------ notebook & kernel
  T.panel = () => {
    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    return w && w.content && w.sessionContext ? w : null;
  };
  T.panelNode = () => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  T.scroller = () => {
    const p = T.panelNode();
    return p && (p.querySelector('.jp-WindowedPanel-outer') || p.querySelector('.jp-Notebook'));
  };
  T.kernel = () => {
    const p = T.panel();
    return p && p.sessionContext.session ? p.sessionContext.session.kernel : null;
  };
  T.kernelIdle = () => {
    const k = T.kernel();
    return Boolean(k && k.status === 'idle' && k.connectionStatus === 'connected');
  };
  // every kernel message (sent or received) stamps lastMsg: "quiet" is the fallback
  // for the explorer's status element until it exists
  T.lastMsg = performance.now();
  T.commLog = [];
  T.hookedKernel = null;
  T.hookKernel = () => {
    const k = T.kernel();
    if (!k || T.hookedKernel === k) return Boolean(k);
    k.anyMessage.connect((_, args) => {
      T.lastMsg = performance.now();
      // widget traffic, to tell after a failed click what the kernel and the page said
      const m = args.msg, c = m.content || {}, d = c.data || {};
      if (!['comm_msg', 'comm_open', 'comm_close'].includes(m.header.msg_type)) return;
      T.commLog.push({ t: Math.round(T.lastMsg), dir: args.direction, type: m.header.msg_type,
                       method: d.method, comm: (c.comm_id || '').slice(0, 8),
                       keys: Object.keys(d.state || {}).slice(0, 12),
                       selected: d.state ? d.state.selected_index : undefined,
                       custom: T.customType(d), buffers: (m.buffers || []).length });
      if (T.commLog.length > 3000) T.commLog.shift();
    });
    T.hookedKernel = k;
    return true;
  };
  // the type of an ipympl message ('draw', 'refresh', 'binary', ...): kernel -> page
  // carries it as JSON in content.data, page -> kernel as content.type
  T.customType = (d) => {
    if (d.method !== 'custom' || !d.content) return undefined;
    if (typeof d.content.data !== 'string') return d.content.type;
    try { return JSON.parse(d.content.data).type; } catch (e) { return '?'; }
  };
  T.kernelQuiet = (ms) => T.kernelIdle() && performance.now() - T.lastMsg > ms;
  // Save as a user does with Ctrl+S. An explicit save can race JupyterLab's own autosave
  // of the same notebook (every few seconds here): the server's copy is then newer than
  // the one the page knows, and JupyterLab asks "File Changed: overwrite or revert?".
  // Both copies are this page's own, so overwrite, as the user would, and count it.
  // The autosave that raced can be the one that asks, after the explicit save is done,
  // so the question is answered whenever it comes.
  T.overwrites = 0;
  setInterval(() => {
    const dialog = document.querySelector('.jp-Dialog');
    if (!dialog || !dialog.textContent.includes('File Changed')) return;
    const button = [...dialog.querySelectorAll('button')]
      .find((b) => b.textContent.trim() === 'Overwrite');
    if (button) { T.overwrites += 1; button.click(); }
  }, 100);
  T.save = () => T.panel().context.save();

  T.runAll = () => {
    T.run = { done: false };
    const started = performance.now();
    window.jupyterapp.commands.execute('notebook:run-all-cells').then(
      (ok) => { T.run = { done: true, ok, ms: performance.now() - started, at: performance.now() }; },
      (err) => { T.run = { done: true, ok: false, error: String(err), at: performance.now() }; });
  };
  T.codeCells = () => {
    const p = T.panel();
    return p ? p.content.widgets.filter((c) => c.model.type === 'code') : [];
  };
  T.unexecuted = () => T.codeCells()
    .map((c, i) => [i, c.model.executionCount])
    .filter(([, n]) => n === null || n === undefined).map(([i]) => i);

  // ------------------------------------------------------------------ explorers
  T.explorers = () => {
    const p = T.panelNode();
    if (!p) return [];
    const real = [...p.querySelectorAll('.gx-explorer')];
    if (real.length) return real;
    return [...p.querySelectorAll('.jp-OutputArea-output')].filter((o) => o.querySelector('.lm-TabBar'));
  };
  T.explorer = (k) => {
    const e = T.explorers()[k];
    if (!e) throw new Error(`explorer ${k} not found (${T.explorers().length} on the page)`);
    return e;
  };
  T.output = (root) => root.closest('.jp-OutputArea-output') || root;
  T.tabBar = (root) => root.querySelector('.lm-TabBar');
  T.tabs = (root) => [...T.tabBar(root).querySelectorAll('.lm-TabBar-tab')];
  T.tabTitles = (k) => T.tabs(T.explorer(k)).map((t) => t.textContent.trim());
  T.currentTab = (k) => {
    const t = T.tabs(T.explorer(k)).find((t) => t.classList.contains('lm-mod-current'));
    return t ? t.textContent.trim() : null;
  };
  // The lumino TabBar behind explorer k's tab bar, and the ipywidgets Tab model it shows:
  // what a failed click leaves behind (attached? a drag pending? the model's index?).
  T.luminoOf = (node) => {
    const p = T.panel();
    if (!p) return null;
    const stack = [p];
    while (stack.length) {
      const w = stack.pop();
      if (w.node === node) return w;
      if (w.node && !w.node.contains(node)) continue;
      if (typeof w.children === 'function') for (const c of w.children()) stack.push(c);
    }
    return null;
  };
  T.tabBarState = (k) => {
    const bar = T.luminoOf(T.tabBar(T.explorer(k)));
    if (!bar) return { found: false };
    const view = bar.parent && bar.parent._view, model = view && view.model;
    const drag = bar._dragData;
    return {
      found: true, attached: bar.isAttached, visible: bar.isVisible, disposed: bar.isDisposed,
      currentIndex: bar.currentIndex, titles: bar.titles.length,
      drag: drag ? { index: drag.index, active: drag.dragActive } : null,
      modelIndex: model ? model.get('selected_index') : 'no model',
      pendingMsgs: model ? model._pending_msgs : null,
      msgBuffer: model ? model._msg_buffer : null,
      expectedEcho: model && model._expectedEchoMsgIds ? [...model._expectedEchoMsgIds.keys()] : null,
      comm: model && model.comm ? String(model.comm.comm_id).slice(0, 8) : null,
    };
  };
  T.status = (root) => {
    const s = root.querySelector('.gx-status [data-state]');
    return s ? { state: s.getAttribute('data-state'), generation: Number(s.getAttribute('data-generation')) } : null;
  };
  T.statusOf = (k) => T.status(T.explorer(k));
  T.text = (root, sel) => { const e = root.querySelector(sel); return e ? e.textContent.trim() : null; };
  T.visibleText = (root, sel) => {
    const e = root.querySelector(sel);
    return e && e.offsetParent !== null && e.innerText.trim() ? e.innerText.trim() : '';
  };

  // The view shown by the explorer's Tab: its figure's main canvas (ipympl) or its img.
  T.stacked = (root) => {
    const bar = T.tabBar(root);
    const isPanel = (n) => n.classList.contains('widget-tab-contents') || n.classList.contains('lm-StackedPanel');
    return [...bar.parentElement.children].find(isPanel) || null;
  };
  T.viewElement = (root) => {
    const st = T.stacked(root);
    if (!st) return null;
    const page = [...st.children].find((c) => !c.classList.contains('lm-mod-hidden'));
    if (!page) return null;
    const pane = page.querySelector('.gx-pane');
    if (!pane) return page.querySelector('canvas') || page.querySelector('img');
    const kind = pane.dataset.kind;
    if (kind === 'maps') return pane.querySelector('canvas.gx-canvas');
    if (kind === 'image') return pane.querySelector('img.gx-image');
    return pane.querySelector('.gx-note');
  };
  // the visible view's pane (the explorer's own element for one view)
  T.pane = (root) => { const el = T.viewElement(root); return el ? el.closest('.gx-pane') : null; };
  T.paneOf = (k) => T.pane(T.explorer(k));

  // What a view left blank is made of: its pane's own record (kind, frames drawn,
  // window, cell texts) and the widget messages of the explorer's kernel.
  T.canvasState = (el) => {
    const pane = el && el.closest('.gx-pane');
    if (!pane) return { found: false };
    return { found: true, ...pane.dataset, width: el.width || el.naturalWidth || null,
             messages: T.commLog.slice(-20).map((e) => `${e.t} ${e.dir} ${e.type} ${e.method || ''}${e.buffers ? ' +buf' : ''}`) };
  };

  // ------------------------------------------------------------------ pixels
  const scratch = document.createElement('canvas');
  T.pixels = (el) => {
    if (!el || el.tagName === 'DIV') return null;
    let w, h, ctx;
    if (el.tagName === 'CANVAS') {
      w = el.width; h = el.height;
      if (!w || !h) return { w, h, data: null };
      ctx = el.getContext('2d');
    } else {  // img: draw it into a scratch canvas
      w = el.naturalWidth; h = el.naturalHeight;
      if (!w || !h || !el.complete) return { w, h, data: null };
      scratch.width = w; scratch.height = h;
      ctx = scratch.getContext('2d');
      ctx.drawImage(el, 0, 0);
    }
    return { w, h, data: new Uint32Array(ctx.getImageData(0, 0, w, h).data.buffer) };
  };
  // blank: no size, or every pixel the same colour (alpha included); a note is blank
  // while it has no words or only says it is drawing
  T.blank = (el) => {
    if (el && el.tagName === 'DIV') {
      const t = (el.textContent || '').trim();
      return !t || t === 'drawing…';
    }
    const p = T.pixels(el);
    if (!p || !p.data) return true;
    const d = p.data, first = d[0];
    for (let i = 1; i < d.length; i++) if (d[i] !== first) return false;
    return true;
  };
  // something a user can read: a picture, or a note (a pane waiting says "drawing…")
  T.showing = (el) => Boolean(el) &&
    (!T.blank(el) || (el.tagName === 'DIV' && el.textContent.trim() === 'drawing…'));
  // pure magenta #ff00ff (little-endian RGBA in a Uint32: 0xAABBGGRR), with a small
  // tolerance for anti-aliased edges; returns the count and the centroid
  T.magenta = (el) => {
    const p = T.pixels(el);
    if (!p || !p.data) return { count: 0 };
    let count = 0, sx = 0, sy = 0;
    const d = p.data;
    for (let i = 0; i < d.length; i++) {
      const v = d[i], r = v & 255, g = (v >>> 8) & 255, b = (v >>> 16) & 255, a = v >>> 24;
      if (a > 200 && r > 235 && b > 235 && g < 30) { count++; sx += i % p.w; sy += Math.floor(i / p.w); }
    }
    return count ? { count, x: sx / count, y: sy / count } : { count };
  };
  const fnv = (h, d) => {
    for (let i = 0; i < d.length; i++) { h ^= d[i]; h = Math.imul(h, 16777619); }
    return h >>> 0;
  };
  // Only the canvases a user can see (the other tabs' are hidden), every other pixel:
  // reading back all of an explorer's canvases each frame took longer than the repaint
  // being timed, and the measurement then timed itself.
  const fnvStride = (h, d, stride) => {
    for (let i = 0; i < d.length; i += stride) { h ^= d[i]; h = Math.imul(h, 16777619); }
    return h >>> 0;
  };
  T.hashCanvases = (root) => {
    let h = 2166136261;
    for (const c of root.querySelectorAll('canvas')) {
      if (!c.checkVisibility()) continue;
      h = fnv(h, [c.width, c.height]);
      if (c.width && c.height) h = fnvStride(h, new Uint32Array(c.getContext('2d').getImageData(0, 0, c.width, c.height).data.buffer), 2);
    }
    return h;
  };
  T.hashView = (root) => `${T.hashCanvases(root)}|${T.hashImages(root)}`;
  T.hashImages = (root) => {
    let h = 2166136261;
    for (const im of root.querySelectorAll('img')) h = fnv(h, [...(im.currentSrc || im.src || '')].map((ch) => ch.charCodeAt(0)));
    return h;
  };
  // Every draw into any 2D canvas is counted: the latency frame reads canvases back only
  // after one (reading back every canvas every frame cost 11-31 ms of the page's main
  // thread a frame, and slowed what it measured).
  T.draws = 0;
  for (const name of ['drawImage', 'putImageData', 'clearRect', 'fillRect']) {
    const original = CanvasRenderingContext2D.prototype[name];
    CanvasRenderingContext2D.prototype[name] = function (...args) {
      T.draws++;
      if (name === 'fillRect' && covers(this, args)) this.canvas.__gxTexts = [];
      return original.apply(this, args);
    };
  }
  // What was written on each canvas since its last whole repaint (a fill of all of it):
  // the text, where, how wide in its font, how aligned. The tests measure the cell values
  // against their cells from this, not from the page's own account of them.
  const covers = (ctx, [x, y, w, h]) => {
    const s = ctx.getTransform().a || 1;
    return x <= 0 && y <= 0 && w * s >= ctx.canvas.width - 1 && h * s >= ctx.canvas.height - 1;
  };
  const fillText = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
    const written = { text: String(text), x, y, width: this.measureText(text).width,
                      align: this.textAlign };
    (this.canvas.__gxTexts ||= []).push(written);
    return fillText.call(this, text, x, y, ...rest);
  };
  // The numbers written centred in a map's cells: each must fit between the centres of
  // its neighbours in its row (a cell's width, as the cells were drawn).
  const NUMBER = /^([-+]?(\d|\.\d|inf)|NaN$)/;
  T.cellValues = (canvas) => {
    const values = ((canvas && canvas.__gxTexts) || [])
      .filter((t) => t.align === 'center' && NUMBER.test(t.text));
    const rows = new Map();
    for (const t of values) {
      const key = Math.round(t.y * 2);
      if (!rows.has(key)) rows.set(key, []);
      rows.get(key).push(t);
    }
    const over = [];
    let measured = 0;
    for (const row of rows.values()) {
      row.sort((a, b) => a.x - b.x);
      row.forEach((t, i) => {
        const cell = Math.min(i > 0 ? t.x - row[i - 1].x : Infinity,
                              i < row.length - 1 ? row[i + 1].x - t.x : Infinity);
        if (cell === Infinity) return;
        measured++;
        if (t.width > cell) over.push(`${t.text}: ${t.width.toFixed(1)} px in ${cell.toFixed(1)}`);
      });
    }
    return { values: values.length, measured, overflow: over.length, examples: over.slice(0, 3) };
  };

  // ------------------------------------------------------------------ geometry
  // The right edge a user can see: the output area, clipped by the notebook's scroller.
  T.bounds = (root) => {
    const out = rect(T.output(root));
    const sc = T.scroller();
    const scr = sc ? sc.getBoundingClientRect() : null;
    const right = scr ? Math.min(out.right, scr.left + sc.clientWidth) : out.right;
    return { left: out.left, right };
  };
  T.viewGeometry = (k) => {
    const root = T.explorer(k);
    const el = T.viewElement(root);
    const b = T.bounds(root);
    return {
      bounds: b,
      view: el ? rect(el) : null,
      viewTag: el ? el.tagName : null,
      explorer: rect(root),
      overflow: root.scrollWidth - root.clientWidth,
    };
  };
  // one key for "what the explorer looks like now": its box, its tab bar's place, the
  // view's box and its pixels; used to wait until it stops changing
  T.layoutKey = (root) => {
    const el = T.viewElement(root);
    const bar = T.tabBar(root);
    const sc = T.scroller();
    const parts = [JSON.stringify(rect(root)), JSON.stringify(rect(bar)), sc ? sc.scrollTop : 0];
    if (el) {
      parts.push(JSON.stringify(rect(el)));
      if (el.tagName === 'DIV') parts.push(el.textContent);
      const p = T.pixels(el);
      parts.push(p && p.data ? fnv(2166136261, p.data) : 'empty');
    }
    return parts.join('|');
  };
  T.stable = {};
  // call once per animation frame (wait_for_function polls on rAF): true after n frames
  // in a row with the same key
  T.stableFor = (k, n, extra) => {
    const root = T.explorer(k);
    const key = T.layoutKey(root) + '|' + (extra || '');
    const s = T.stable[k] || (T.stable[k] = { key: null, frames: 0 });
    if (s.key === key) s.frames++; else { s.key = key; s.frames = 0; }
    return s.frames >= n;
  };
  T.resetStable = (k) => { delete T.stable[k]; };

  // What is at the middle of a tab, right now.
  T.tabHit = (k, title) => {
    const t = T.tabs(T.explorer(k)).find((t) => t.textContent.trim() === title);
    if (!t) return null;
    const b = t.getBoundingClientRect();
    const x = b.left + b.width / 2, y = b.top + b.height / 2;
    const hit = document.elementFromPoint(x, y);
    const sc = T.scroller();
    return { x, y, rect: rect(t), docTop: round(b.top + (sc ? sc.scrollTop : 0)),
             onTab: Boolean(hit && t.contains(hit)), hit: describe(hit),
             inWindow: y > 0 && y < window.innerHeight && x > 0 && x < window.innerWidth };
  };
  // the last pointerdown anywhere: where and on what
  T.lastDown = null;
  document.addEventListener('pointerdown', (e) => {
    const down = { x: e.clientX, y: e.clientY, target: describe(e.target), t: performance.now() };
    T.lastDown = down;
    // a press on a tab bar: lumino's state as the press arrives (a drag still pending
    // from an earlier press makes lumino ignore this one)
    try {
      const barNode = e.target.closest && e.target.closest('.lm-TabBar');
      const bar = barNode && T.luminoOf(barNode);
      if (bar) {
        down.bar = { attached: bar.isAttached, current: bar.currentIndex,
                     drag: bar._dragData ? { index: bar._dragData.index,
                                             active: bar._dragData.dragActive } : null };
      }
    } catch (err) { down.bar = String(err); }
    // after dispatch: did a handler (lumino's TabBar does) take the press?
    setTimeout(() => { down.defaultPrevented = e.defaultPrevented; }, 0);
  }, true);
  T.lastUp = null;
  document.addEventListener('pointerup', (e) => {
    const up = { x: e.clientX, y: e.clientY, target: describe(e.target), t: performance.now() };
    T.lastUp = up;
    setTimeout(() => { up.defaultPrevented = e.defaultPrevented; }, 0);
  }, true);
  // every tab that became current or stopped being it (to tell a click never taken from
  // one taken and then undone)
  T.tabLog = [];
  const tabObserver = new MutationObserver((records) => {
    for (const r of records) {
      const t = r.target;
      if (!t.classList || !t.classList.contains('lm-TabBar-tab')) continue;
      const was = (r.oldValue || '').split(/\s+/).includes('lm-mod-current');
      const now = t.classList.contains('lm-mod-current');
      if (was !== now) {
        T.tabLog.push({ t: Math.round(performance.now()), title: t.textContent.trim(), current: now });
        if (T.tabLog.length > 60) T.tabLog.shift();
      }
    }
  });
  // this script runs before the page has a body
  const watchTabs = () => tabObserver.observe(document.body, {
    subtree: true, attributes: true, attributeFilter: ['class'], attributeOldValue: true });
  if (document.body) watchTabs(); else document.addEventListener('DOMContentLoaded', watchTabs);

  // ------------------------------------------------------------------ layout-shift audit
  // Per frame, each explorer's tab bar in document coordinates (scroll removed): when
  // did one last move, and by how much.
  T.audit = null;
  T.startAudit = () => {
    const a = { t0: performance.now(), last: null, moves: 0, maxJump: 0, prev: null, stop: false, log: [], tail: [] };
    T.audit = a;
    const frame = () => {
      if (a.stop) return;
      const sc = T.scroller();
      const st = sc ? sc.scrollTop : 0;
      const ys = T.explorers().map((r) => Math.round(T.tabBar(r).getBoundingClientRect().top + st));
      if (a.prev && ys.length === a.prev.length) {
        ys.forEach((y, i) => {
          const jump = Math.abs(y - a.prev[i]);
          if (jump > 1) {
            a.moves++; a.last = performance.now(); a.maxJump = Math.max(a.maxJump, jump);
            const move = [Math.round(a.last - a.t0), i, a.prev[i], y];
            if (a.log.length < 40) a.log.push(move);
            a.tail = [...a.tail.slice(-9), [...move, T.describe(T.viewElement(T.explorers()[i]))]];
          }
        });
      }
      a.prev = ys;
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  };

  // ------------------------------------------------------------------ latency
  // look(frameTime) once per frame, after that frame's rendering step: a change is timed
  // at the start of the frame that shows it, whether it came between frames (a label the
  // kernel set) or in the frame's own animation callbacks (a canvas drawn there). Read
  // inside requestAnimationFrame, the second kind was only seen a frame later (the
  // reader's callback runs before the pane's), which put one frame on every explorer
  // figure that the anchor did not pay.
  T.eachFrame = (stopped, look, done) => {
    const channel = new MessageChannel();
    let frameTime = 0;
    channel.port1.onmessage = () => {
      if (stopped()) { channel.port1.close(); done(); return; }
      look(frameTime);
      requestAnimationFrame(frame);
    };
    const frame = (t) => { frameTime = t; channel.port2.postMessage(null); };
    requestAnimationFrame(frame);
  };
  // The anchor: from the keydown on a plain ipywidgets slider to the frame that shows the
  // label the kernel set from its value (one round trip through the kernel, nothing drawn).
  T.anchor = null;
  T.startAnchor = () => {
    const root = T.panelNode().querySelector('.gx-anchor');
    const label = () => root.querySelector('.widget-html-content').textContent.trim();
    const A = { tKey: null, change: null, stop: false };
    if (T.anchor) T.anchor.stop = true;
    T.anchor = A;
    const onKey = (e) => { if (A.tKey === null) A.tKey = e.timeStamp; };
    document.addEventListener('keydown', onKey, true);
    let prev = label();
    T.eachFrame(() => A.stop, (frameTime) => {
      const now = label();
      if (now !== prev && A.tKey !== null && A.change === null) A.change = frameTime;
      prev = now;
    }, () => document.removeEventListener('keydown', onKey, true));
  };

  // From the keydown on the focused slider to the first and the last change of any canvas
  // of the explorer: each animation frame after a draw hashes its canvases; the change is timed
  // at the start of the frame that shows it.
  T.lat = null;
  T.startLatency = (k) => {
    if (T.lat) T.lat.stop = true;
    const root = T.explorer(k);
    const L = { tKey: null, firstChange: null, lastChange: null, changes: 0, stableFrames: 0, frames: 0, stop: false,
                status0: T.status(root), hashMs: 0 };
    T.lat = L;
    const onKey = (e) => { if (L.tKey === null) L.tKey = e.timeStamp; };
    document.addEventListener('keydown', onKey, true);
    let canvases = T.hashCanvases(root), draws = T.draws;
    let prev = `${canvases}|${T.hashImages(root)}`;
    T.eachFrame(() => L.stop, (frameTime) => {
      const t0 = performance.now();
      // canvas pixels are read back only after a draw; image sources are cheap to compare
      if (T.draws !== draws) { canvases = T.hashCanvases(root); draws = T.draws; }
      const h = `${canvases}|${T.hashImages(root)}`;
      L.hashMs = Math.max(L.hashMs, performance.now() - t0);
      if (h !== prev) {
        prev = h;
        // the frame that shows the change (its start)
        if (L.tKey !== null) {
          if (L.firstChange === null) L.firstChange = frameTime;
          L.lastChange = frameTime;
          L.changes++;
        }
        L.stableFrames = 0;
      } else {
        L.stableFrames++;
      }
      L.frames++;
    }, () => document.removeEventListener('keydown', onKey, true));
  };
})();
