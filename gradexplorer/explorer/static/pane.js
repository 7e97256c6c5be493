// gradexplorer's view pane: draws one explorer view from the numbers the kernel sends.
//
// Plain ES module, no build step, no network: anywidget loads it from the package.
// The kernel sends, in the widget's state:
//   spec    what to draw (JSON): a note, a picture, or maps (panels, scales, selection)
//   labels  row / column labels by path, axis titles, block separators (rarely changes)
//   b0..b5  float32 arrays (comm buffers), named by slot in spec
//   png     a matplotlib picture, for the views drawn in the kernel
//   luts    each colormap's 256 colours and the bad colour, RGBA bytes (sent once)
//   tile    a window of a pooled map at full resolution, sent when the user zooms
// The page draws: colour-mapped cells (the same colours as matplotlib's maps), colour
// bars, labels, the magenta selection, hover tooltips; clicks, wheel zoom and drag pan.

const FONT = 'sans-serif';
const MAGENTA = '#ff00ff';
const ORANGE = '#ff9900';
const ANNOTATE_MAX = 12;
const TICKS_MAX = 24;
const SLOTS = ['b0', 'b1', 'b2', 'b3', 'b4', 'b5'];

// ------------------------------------------------------------------ numbers

const cache = new WeakMap();
function f32(v) {
  if (!v) return null;
  if (cache.has(v)) return cache.get(v);
  let out = null;
  if (v instanceof DataView || ArrayBuffer.isView(v)) {
    if (v.byteLength) {
      out = v.byteOffset % 4
        ? new Float32Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength))
        : new Float32Array(v.buffer, v.byteOffset, v.byteLength / 4);
    }
  } else if (v instanceof ArrayBuffer && v.byteLength) {
    out = new Float32Array(v);
  }
  if (out && typeof v === 'object') cache.set(v, out);
  return out;
}
function base64(data) {
  let text = '';
  for (let i = 0; i < data.length; i += 0x8000) text += String.fromCharCode.apply(null, data.subarray(i, i + 0x8000));
  return btoa(text);
}
function bytes(v) {
  if (!v) return null;
  if (v instanceof DataView || ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  return null;
}

// Python's '%.3g' (NaN and infinities in words), as display/scales.py: cell_text
export function fmt(v, digits = 3) {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+inf';
  if (v === -Infinity) return '-inf';
  if (v === 0) return '0';
  const [m, e] = v.toExponential(digits - 1).split('e');
  const exp = parseInt(e, 10);
  if (exp < -4 || exp >= digits) {
    const mant = m.includes('.') ? m.replace(/0+$/, '').replace(/\.$/, '') : m;
    return `${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  const fixed = v.toFixed(Math.max(0, digits - 1 - exp));
  return fixed.includes('.') ? fixed.replace(/0+$/, '').replace(/\.$/, '') : fixed;
}

// The position of v on a scale, 0..1 (matplotlib's norms; log scales put values <= 0
// at the bottom, as display/heatmap.py does), NaN for cells drawn in the bad colour.
function normOf(scale) {
  const { vmin, vmax, log, kind } = scale;
  if (log) {
    const lo = Math.log10(vmin), span = Math.log10(vmax) - lo;
    return (v) => (!Number.isFinite(v) ? NaN : v <= 0 ? 0 : (Math.log10(v) - lo) / span);
  }
  if (kind === 'signed') return (v) => (Number.isFinite(v) ? (v + vmax) / (2 * vmax) : NaN);
  return (v) => (Number.isFinite(v) ? (v - vmin) / (vmax - vmin) : NaN);
}
// matplotlib's Colormap.__call__: index int(t * N), clipped to the ends
function colourIndex(t, n) {
  if (Number.isNaN(t)) return n;  // the bad colour, stored after the n colours
  const k = Math.floor(t * n);
  return k < 0 ? 0 : k >= n ? n - 1 : k;
}

// ------------------------------------------------------------------ ticks

function niceTicks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((s) => s * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}
function logTicks(lo, hi) {
  const a = Math.ceil(Math.log10(lo) - 1e-9), b = Math.floor(Math.log10(hi) + 1e-9);
  const every = Math.max(1, Math.ceil((b - a + 1) / 7));
  const out = [];
  for (let e = a; e <= b; e += every) out.push(10 ** e);
  return out;
}
function indexTicks(a, b) {  // integer cell indices in [a, b)
  return niceTicks(a, b - 1, 6).filter((v) => Number.isInteger(v) && v >= a && v < b);
}

// ------------------------------------------------------------------ layout

function gridOf(spec, W, H) {
  const [rows, cols] = spec.grid || [1, 1];
  const top = spec.title ? 30 : 6;
  const pointsH = spec.points ? Math.round(H * 0.34) : 0;
  const cellW = W / cols, cellH = (H - top - pointsH) / rows;
  return { rows, cols, top, pointsH, cellW, cellH };
}

function panelBoxes(spec, labels, W, H, win) {
  const g = gridOf(spec, W, H);
  const wr = win.r1 - win.r0, wc = win.c1 - win.c0;
  const rowTicks = wr <= TICKS_MAX && labels.rows, colTicks = wc <= TICKS_MAX && labels.cols;
  const longest = (list, a, b) => Math.max(0, ...(list || []).slice(a, b).map((s) => String(s).length));
  const left = 22 + (rowTicks ? Math.min(110, 6.2 * longest(labels.rows, win.r0, win.r1) + 6) : 30);
  const bottom = 18 + (colTicks ? Math.min(90, 6.2 * longest(labels.cols, win.c0, win.c1) + 6) : 16);
  return spec.panels.map((p, k) => {
    const [gr, gc] = p.at || [Math.floor(k / g.cols), k % g.cols];
    const x0 = gc * g.cellW, y0 = g.top + gr * g.cellH;
    const captionH = p.caption ? 14 * p.caption.split('\n').length : 0;
    const map = { x: x0 + left, y: y0 + 20, w: g.cellW - left - 70, h: g.cellH - 20 - bottom - captionH };
    return { p, k, cell: { x: x0, y: y0, w: g.cellW, h: g.cellH }, map, bar: { x: map.x + map.w + 10, y: map.y, w: 12, h: map.h },
             rowTicks, colTicks, bottom, captionH };
  });
}

// ------------------------------------------------------------------ the pane

function render({ model, el }) {
  const root = document.createElement('div');
  root.className = 'gx-pane';
  const canvas = document.createElement('canvas');
  canvas.className = 'gx-canvas';
  const img = document.createElement('img');
  img.className = 'gx-image';
  img.alt = '';
  const note = document.createElement('div');
  note.className = 'gx-note';
  const tip = document.createElement('div');
  tip.className = 'gx-tip';
  root.append(canvas, img, note, tip);
  el.appendChild(root);

  const S = { win: null, winKey: null, boxes: [], hover: null, drag: null, imgUrl: null, imgOf: null,
              cells: new Map(), bars: {}, frame: 0, drawnSpec: null, lastWidth: 860, pictureTimer: null, disposed: false };
  root.__gx = S;  // for tests: what was drawn (the pane's own record)

  const spec = () => model.get('spec') || {};
  const labels = () => model.get('labels') || {};
  const luts = () => model.get('luts') || {};
  const arr = (slot) => (slot ? f32(model.get(slot)) : null);

  function fullShape(sp) {
    const p = sp.panels && sp.panels[0];
    return p ? p.full || [p.rows, p.cols] : [1, 1];
  }
  function window_(sp) {  // the window of the maps in full indices; reset on a new shape
    const [M, N] = fullShape(sp);
    const key = `${M}x${N}`;
    if (S.winKey !== key || !S.win) { S.win = { r0: 0, r1: M, c0: 0, c1: N }; S.winKey = key; }
    if (sp.zoom && sp.zoomKey !== S.zoomKey) {  // "zoom to entry": the cells around it
      const [i, j, half] = sp.zoom, n = 2 * half + 1;
      const r0 = Math.max(0, Math.min(i - half, M - n)), c0 = Math.max(0, Math.min(j - half, N - n));
      S.win = { r0, r1: Math.min(M, r0 + n), c0, c1: Math.min(N, c0 + n) };
      S.zoomKey = sp.zoomKey;
      requestTile(sp);
    } else if (!sp.zoom && S.zoomKey) {
      S.win = { r0: 0, r1: M, c0: 0, c1: N };
      S.zoomKey = null;
    }
    return S.win;
  }

  // colour-mapped cells of a panel's array, one pixel a cell (cached by array and scale)
  function cellCanvas(values, rows, cols, scale) {
    const key = `${rows}x${cols}|${JSON.stringify(scale)}`;
    const hit = S.cells.get(values);
    if (hit && hit.key === key) return hit.canvas;
    const lut = bytes(luts()[scale.cmap]);
    const c = document.createElement('canvas');
    c.width = cols; c.height = rows;
    const cx = c.getContext('2d');
    const image = cx.createImageData(cols, rows);
    const px = new Uint32Array(image.data.buffer);
    const colours = lut ? new Uint32Array(lut.buffer.slice(lut.byteOffset, lut.byteOffset + lut.byteLength)) : null;
    const n = colours ? colours.length - 1 : 256;
    const norm = normOf(scale);
    for (let k = 0; k < rows * cols; k++) {
      const idx = colourIndex(norm(values[k]), n);
      px[k] = colours ? colours[idx] : 0xff000000 | (idx * 0x010101);
    }
    cx.putImageData(image, 0, 0);
    S.cells.set(values, { key, canvas: c });
    return c;
  }

  function sizeCanvas(target, W, H) {
    const dpr = target === canvas ? window.devicePixelRatio || 1 : 1;
    if (target.width !== Math.round(W * dpr) || target.height !== Math.round(H * dpr)) {
      target.width = Math.round(W * dpr); target.height = Math.round(H * dpr);
    }
    if (target === canvas) { canvas.style.width = `${W}px`; canvas.style.height = `${H}px`; }
    const ctx = target.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }

  function paintMaps(target, W, sp) {
    const H = sp.height || 520;
    const lb = labels();
    const win = window_(sp);
    const ctx = sizeCanvas(target, W, H);
    ctx.fillStyle = 'white';
    ctx.fillRect(0, 0, W, H);
    ctx.textBaseline = 'middle';
    if (sp.title) {
      ctx.font = `bold 14px ${FONT}`; ctx.fillStyle = sp.title_color || '#222'; ctx.textAlign = 'center';
      ctx.fillText(sp.title, W / 2, 14, W - 10);
    }
    const boxes = panelBoxes(sp, lb, W, H, win);
    const record = { texts: 0, skipped: 0 };
    for (const b of boxes) paintPanel(ctx, b, sp, lb, win, record);
    if (sp.points) paintPoints(ctx, sp, W, H);
    if (target === canvas) {
      S.boxes = boxes;
      root.dataset.cellTexts = record.texts;
      root.dataset.cellSkipped = record.skipped;
      root.dataset.window = `${win.r0},${win.r1},${win.c0},${win.c1}`;
      // the window shown at full resolution by a tile (one that covers it, unpooled): an
      // earlier tile, for a wider window the wheel passed through, may still be pooled
      const t = tileFor(sp, 0);
      root.dataset.tile = t && (sp.panels[0].block || [1, 1])[0] > 1 && fullTile(t, win) ? `${t.r0},${t.r1},${t.c0},${t.c1}` : '';
    }
    return H;
  }

  function fullTile(t, win) {
    const [tbr, tbc] = t.block || [1, 1];
    return tbr === 1 && tbc === 1 && t.r0 <= win.r0 && t.r1 >= win.r1 && t.c0 <= win.c0 && t.c1 >= win.c1;
  }

  function tileFor(sp, k) {
    const t = model.get('tile');
    if (!t || !t.slots || t.key !== sp.key) return null;
    const p = sp.panels[k], values = f32(t.slots[p.slot]);
    return values ? { ...t, values } : null;
  }

  function paintPanel(ctx, b, sp, lb, win, record) {
    const { p, map, bar } = b;
    const values = arr(p.slot);
    ctx.font = `12px ${FONT}`; ctx.fillStyle = '#222'; ctx.textAlign = 'center';
    ctx.fillText(p.title || '', map.x + map.w / 2, map.y - 10, b.cell.w - 10);
    ctx.fillStyle = '#f4f4f4';
    ctx.fillRect(map.x, map.y, map.w, map.h);
    const [br, bc] = p.block || [1, 1];
    const cw = map.w / (win.c1 - win.c0), ch = map.h / (win.r1 - win.r0);
    if (values && values.length === p.rows * p.cols) {
      ctx.imageSmoothingEnabled = false;
      const cells = cellCanvas(values, p.rows, p.cols, p.scale);
      ctx.drawImage(cells, win.c0 / bc, win.r0 / br, (win.c1 - win.c0) / bc, (win.r1 - win.r0) / br, map.x, map.y, map.w, map.h);
      const tile = (br > 1 || bc > 1) ? tileFor(sp, b.k) : null;
      if (tile) {
        const tc = cellCanvas(tile.values, tile.rows, tile.cols, p.scale);
        const x = map.x + (tile.c0 - win.c0) * cw, y = map.y + (tile.r0 - win.r0) * ch;
        ctx.save(); ctx.beginPath(); ctx.rect(map.x, map.y, map.w, map.h); ctx.clip();
        ctx.drawImage(tc, x, y, (tile.c1 - tile.c0) * cw, (tile.r1 - tile.r0) * ch);
        ctx.restore();
      }
      const wr = win.r1 - win.r0, wc = win.c1 - win.c0;
      if (br === 1 && bc === 1 && wr <= ANNOTATE_MAX && wc <= ANNOTATE_MAX) paintValues(ctx, values, p, map, win, cw, ch, record);
    }
    // block separators (stacked outputs, concatenated inputs)
    ctx.strokeStyle = 'black'; ctx.lineWidth = 1.2;
    for (const r of lb.row_seps || []) if (r > win.r0 && r < win.r1) line(ctx, map.x, map.y + (r - win.r0) * ch, map.x + map.w, map.y + (r - win.r0) * ch);
    for (const c of lb.col_seps || []) if (c > win.c0 && c < win.c1) line(ctx, map.x + (c - win.c0) * cw, map.y, map.x + (c - win.c0) * cw, map.y + map.h);
    ctx.save(); ctx.beginPath(); ctx.rect(map.x, map.y, map.w, map.h); ctx.clip();
    paintMarks(ctx, sp, p, map, win, cw, ch);
    ctx.restore();
    ctx.strokeStyle = '#333'; ctx.lineWidth = 1; ctx.strokeRect(map.x, map.y, map.w, map.h);
    paintAxes(ctx, b, lb, win, cw, ch);
    paintBar(ctx, bar, p);
    if ((sp.pending || []).includes(b.k)) pendingLabel(ctx, map, sp.pending_text || 'checking…');
  }

  function paintValues(ctx, values, p, map, win, cw, ch, record) {
    const lut = bytes(luts()[p.scale.cmap]);
    const norm = normOf(p.scale), n = lut ? lut.length / 4 - 1 : 256;
    for (let i = win.r0; i < win.r1; i++) {
      for (let j = win.c0; j < win.c1; j++) {
        const v = values[i * p.cols + j], text = fmt(v);
        // the largest font (11 px, 8 pt at 100 dpi) down to 9 px that fits the cell
        let size = 11, width;
        for (; size >= 9; size--) {
          ctx.font = `${size}px ${FONT}`;
          width = ctx.measureText(text).width;
          if (width <= cw - 3 && size + 2 <= ch) break;
        }
        if (size < 9) { record.skipped++; continue; }
        record.texts++;
        const k = lut ? colourIndex(norm(v), n) * 4 : 0;
        const lum = lut ? (0.299 * lut[k] + 0.587 * lut[k + 1] + 0.114 * lut[k + 2]) / 255 : 1;
        ctx.fillStyle = lum < 0.45 ? 'white' : 'black';
        ctx.textAlign = 'center';
        ctx.fillText(text, map.x + (j - win.c0 + 0.5) * cw, map.y + (i - win.r0 + 0.5) * ch);
      }
    }
  }

  function paintMarks(ctx, sp, p, map, win, cw, ch) {
    const [br, bc] = p.block || [1, 1];
    const cell = (i, j, inflate = 0) => [map.x + (j - win.c0) * cw - inflate, map.y + (i - win.r0) * ch - inflate];
    for (const [i, j] of sp.marks || []) {
      const i0 = i - (i % br), j0 = j - (j % bc);
      const [x, y] = cell(i0, j0);
      // inside its own cell: on the border it looked like its neighbours' outline too
      const w = bc * cw, h = br * ch, d = Math.min(3, w / 4, h / 4);
      ctx.lineWidth = 3.5; ctx.strokeStyle = 'black'; ctx.strokeRect(x + d, y + d, w - 2 * d, h - 2 * d);
      ctx.lineWidth = 2; ctx.strokeStyle = ORANGE; ctx.strokeRect(x + d, y + d, w - 2 * d, h - 2 * d);
    }
    if (sp.worst) {
      const [x, y] = cell(sp.worst[0], sp.worst[1]);
      ctx.font = `${Math.max(10, Math.min(16, ch * 0.6))}px ${FONT}`; ctx.textAlign = 'left';
      ctx.lineWidth = 3; ctx.strokeStyle = 'white'; ctx.strokeText('★', x + 1, y + Math.min(8, ch / 3));
      ctx.fillStyle = 'black'; ctx.fillText('★', x + 1, y + Math.min(8, ch / 3));
    }
    const sel = S.localSel || sp.selection;
    if (sel) {
      const [i, j] = sel;
      // a cell of a large map is a pixel or two: the outline keeps a size one can see
      const w = Math.max(cw, 9), h = Math.max(ch, 9);
      const [x, y] = cell(i, j);
      const cx = x + cw / 2, cy = y + ch / 2;
      ctx.strokeStyle = MAGENTA; ctx.lineWidth = 2.5;
      ctx.strokeRect(cx - w / 2, cy - h / 2, w, h);
      if (win.r1 - win.r0 > 32 || win.c1 - win.c0 > 32) {  // a pixel-sized cell: point at it
        const gap = Math.max(map.w, map.h) / 40;
        ctx.globalAlpha = 0.8; ctx.lineWidth = 1;
        line(ctx, map.x, cy, cx - gap, cy); line(ctx, cx + gap, cy, map.x + map.w, cy);
        line(ctx, cx, map.y, cx, cy - gap); line(ctx, cx, cy + gap, cx, map.y + map.h);
        ctx.globalAlpha = 1;
      }
    }
  }

  function paintAxes(ctx, b, lb, win, cw, ch) {
    const { map } = b;
    ctx.fillStyle = '#222'; ctx.font = `11px ${FONT}`;
    if (b.rowTicks) {
      ctx.textAlign = 'right';
      for (let i = win.r0; i < win.r1; i++) ctx.fillText(lb.rows[i], map.x - 4, map.y + (i - win.r0 + 0.5) * ch, 106);
    } else {
      ctx.textAlign = 'right';
      for (const i of indexTicks(win.r0, win.r1)) ctx.fillText(String(i), map.x - 4, map.y + (i - win.r0 + 0.5) * ch);
    }
    if (b.colTicks) {
      ctx.textAlign = 'right';
      for (let j = win.c0; j < win.c1; j++) {
        ctx.save(); ctx.translate(map.x + (j - win.c0 + 0.5) * cw, map.y + map.h + 4); ctx.rotate(-Math.PI / 2);
        ctx.fillText(lb.cols[j], 0, 0, 86); ctx.restore();
      }
    } else {
      ctx.textAlign = 'center';
      for (const j of indexTicks(win.c0, win.c1)) ctx.fillText(String(j), map.x + (j - win.c0 + 0.5) * cw, map.y + map.h + 9);
    }
    ctx.textAlign = 'center'; ctx.font = `11px ${FONT}`;
    const yx = map.y + map.h + b.bottom - 8;
    ctx.fillText(lb.xlabel || 'input x[j]', map.x + map.w / 2, yx, b.cell.w - 8);
    let caption = b.p.caption;
    const t = tileFor(spec(), b.k);
    if (t && (b.p.block || [1, 1])[0] > 1 && fullTile(t, win)) {
      caption = 'zoomed in: every entry (double click: the whole map, pooled)';
    }
    if (caption) {
      ctx.fillStyle = '#444';
      caption.split('\n').forEach((c, k) => ctx.fillText(c, map.x + map.w / 2, yx + 14 * (k + 1), b.cell.w - 8));
    }
    ctx.save(); ctx.translate(b.cell.x + 9, map.y + map.h / 2); ctx.rotate(-Math.PI / 2);
    ctx.fillStyle = '#222'; ctx.fillText(lb.ylabel || 'output y[i]', 0, 0, map.h); ctx.restore();
  }

  function paintBar(ctx, bar, p) {
    const lut = bytes(luts()[p.scale.cmap]);
    if (!lut) return;
    const n = lut.length / 4 - 1;
    let strip = S.bars[p.scale.cmap];
    if (!strip) {  // the colormap as a 1 x n picture, top = the last colour
      strip = S.bars[p.scale.cmap] = document.createElement('canvas');
      strip.width = 1; strip.height = n;
      const sx = strip.getContext('2d'), image = sx.createImageData(1, n);
      for (let k = 0; k < n; k++) image.data.set(lut.subarray(4 * k, 4 * k + 4), 4 * (n - 1 - k));
      sx.putImageData(image, 0, 0);
    }
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(strip, bar.x, bar.y, bar.w, bar.h);
    ctx.strokeStyle = '#333'; ctx.lineWidth = 1; ctx.strokeRect(bar.x, bar.y, bar.w, bar.h);
    const { vmin, vmax, log } = p.scale;
    const norm = normOf(p.scale);
    const ticks = log ? logTicks(vmin, vmax) : niceTicks(vmin, vmax);
    ctx.fillStyle = '#222'; ctx.font = `10px ${FONT}`; ctx.textAlign = 'left';
    for (const t of ticks) {
      const y = bar.y + bar.h * (1 - norm(t));
      line(ctx, bar.x + bar.w, y, bar.x + bar.w + 3, y);
      ctx.fillText(log ? `1e${Math.round(Math.log10(t))}` : fmt(t), bar.x + bar.w + 5, y, 48);
    }
    if (p.scale.kind === 'violation') {  // the pass/fail line
      const y = bar.y + bar.h * (1 - norm(1));
      ctx.strokeStyle = 'red'; ctx.lineWidth = 2; line(ctx, bar.x, y, bar.x + bar.w, y);
    }
  }

  function paintPoints(ctx, sp, W, H) {
    const P = sp.points, values = arr(P.slot);
    const box = { x: 70, y: H - gridOf(sp, W, H).pointsH + 24, w: W - 110, h: gridOf(sp, W, H).pointsH - 60 };
    ctx.font = `12px ${FONT}`; ctx.fillStyle = '#222'; ctx.textAlign = 'center';
    ctx.fillText(P.title || '', box.x + box.w / 2, box.y - 12);
    ctx.strokeStyle = '#333'; ctx.lineWidth = 1; ctx.strokeRect(box.x, box.y, box.w, box.h);
    if (!values || !values.length) return;
    const finite = [...values].filter(Number.isFinite);
    let lo = Math.min(0, ...finite), hi = Math.max(0, ...finite);
    if (hi === lo) hi = lo + 1;
    const pad = (hi - lo) * 0.08; lo -= pad; hi += pad;
    const X = (k) => box.x + (values.length === 1 ? box.w / 2 : 12 + (k * (box.w - 24)) / (values.length - 1));
    const Y = (v) => box.y + box.h * (1 - (v - lo) / (hi - lo));
    ctx.strokeStyle = 'grey'; ctx.lineWidth = 0.8; line(ctx, box.x, Y(0), box.x + box.w, Y(0));
    ctx.fillStyle = '#2166ac';
    values.forEach((v, k) => { if (Number.isFinite(v)) { ctx.beginPath(); ctx.arc(X(k), Y(v), 3.5, 0, 2 * Math.PI); ctx.fill(); } });
    ctx.fillStyle = '#222'; ctx.font = `10px ${FONT}`; ctx.textAlign = 'right';
    for (const t of niceTicks(lo, hi, 4)) { ctx.fillText(fmt(t), box.x - 4, Y(t)); line(ctx, box.x - 3, Y(t), box.x, Y(t)); }
    ctx.textAlign = 'left'; ctx.font = `12px ${FONT}`;
    if (P.text) ctx.fillText(P.text, box.x + 6, box.y + 12);
    ctx.textAlign = 'center'; ctx.font = `11px ${FONT}`;
    ctx.fillText(P.xlabel || '', box.x + box.w / 2, box.y + box.h + 14);
  }

  function pendingLabel(ctx, map, text) {
    ctx.font = `14px ${FONT}`;
    const w = ctx.measureText(text).width + 24, h = 28;
    ctx.fillStyle = 'white'; ctx.strokeStyle = '#888'; ctx.lineWidth = 1;
    ctx.fillRect(map.x + map.w / 2 - w / 2, map.y + map.h / 2 - h / 2, w, h);
    ctx.strokeRect(map.x + map.w / 2 - w / 2, map.y + map.h / 2 - h / 2, w, h);
    ctx.fillStyle = '#333'; ctx.textAlign = 'center'; ctx.fillText(text, map.x + map.w / 2, map.y + map.h / 2);
  }

  function line(ctx, x0, y0, x1, y1) { ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke(); }

  // ---------------------------------------------------------------- the frame

  function width() {
    const w = root.clientWidth || el.clientWidth;
    if (w > 0) S.lastWidth = Math.min(w, 860);
    return S.lastWidth;
  }

  function draw() {
    const t0 = performance.now();
    S.frame = 0;
    if (S.disposed) return;
    const sp = spec();
    const kind = sp.kind || 'pending';
    canvas.style.display = kind === 'maps' ? 'block' : 'none';
    img.style.display = kind === 'image' ? 'block' : 'none';
    note.style.display = kind === 'note' || kind === 'pending' ? 'block' : 'none';
    root.dataset.kind = kind;
    root.dataset.view = model.get('view') || '';
    if (kind === 'maps') {
      paintMaps(canvas, width(), sp);
    } else if (kind === 'image') {
      const png = model.get('png');
      if (png !== S.imgOf) {
        const data = bytes(png);
        S.imgOf = png;
        // a data: URL, not a blob: one: a blob revoked (or collected) while Chromium had
        // set its decoded picture aside left the view blank
        if (data && data.length) {
          root.dataset.image = 'loading';
          img.src = `data:image/png;base64,${base64(data)}`;
        }
      }
      img.style.width = sp.width ? `${Math.min(sp.width, width())}px` : '100%';
    } else {
      note.textContent = kind === 'pending' ? (sp.text || 'drawing…') : sp.text || '';
      // waiting, the pane takes the height its picture will have: the tab bars of the
      // explorers below do not move when it comes (a click would land elsewhere)
      note.style.height = kind === 'pending' ? `${sp.height || 200}px` : '';
    }
    root.dataset.drawn = String((Number(root.dataset.drawn) || 0) + 1);
    root.dataset.drawnAt = performance.now().toFixed(1);
    root.dataset.drawMs = (performance.now() - t0).toFixed(1);
  }
  function schedule() { if (!S.frame) S.frame = requestAnimationFrame(draw); }

  // ---------------------------------------------------------------- pointer

  function at(ev) {  // the panel and full-matrix entry under the pointer
    const r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    for (const b of S.boxes) {
      const m = b.map;
      if (x >= m.x && x < m.x + m.w && y >= m.y && y < m.y + m.h) {
        const w = S.win;
        const j = Math.floor(w.c0 + ((x - m.x) / m.w) * (w.c1 - w.c0));
        const i = Math.floor(w.r0 + ((y - m.y) / m.h) * (w.r1 - w.r0));
        return { b, i, j, x, y };
      }
    }
    return null;
  }

  function valueAt(sp, slot, i, j) {
    const p = sp.panels[0], [br, bc] = p.block || [1, 1];
    const t = model.get('tile');
    if ((br > 1 || bc > 1) && t && t.key === sp.key && i >= t.r0 && i < t.r1 && j >= t.c0 && j < t.c1) {
      const v = f32(t.slots[slot]);
      const [tbr, tbc] = t.block || [1, 1];
      if (v) return [v[Math.floor((i - t.r0) / tbr) * t.cols + Math.floor((j - t.c0) / tbc)], tbr * tbc > 1];
    }
    const v = arr(slot);
    return v ? [v[Math.floor(i / br) * p.cols + Math.floor(j / bc)], br * bc > 1] : [undefined, false];
  }

  function tooltip(ev) {
    const t0 = ev.timeStamp;
    const hit = at(ev), sp = spec();
    if (!hit || sp.kind !== 'maps') { tip.style.display = 'none'; return; }
    const lb = labels(), H = sp.hover || {};
    const rowName = (lb.rows && lb.rows[hit.i]) || `y[${hit.i}]`, colName = (lb.cols && lb.cols[hit.j]) || `x[${hit.j}]`;
    const lines = [];
    let pooled = false;
    const slot = hit.b.p.slot;
    const own = valueAt(sp, slot, hit.i, hit.j);
    pooled = own[1];
    lines.push(pooled ? `block around ${rowName} / ${colName}` : `${rowName} / ${colName}`);
    const rows = [['analytic', 'analytic'], ['numeric', 'numeric'], ['|diff|', 'abs_err'], ['FD error ±', 'fd_error'], ['violation', 'violation']];
    let any = false;
    for (const [name, key] of rows) {
      if (!H[key]) continue;
      const [v] = valueAt(sp, H[key], hit.i, hit.j);
      if (v === undefined) continue;
      any = true;
      lines.push(`${name.padEnd(11)} ${key === 'violation' ? `${fmt(v)} (${v > 1 ? 'fails' : 'ok'})` : Number.isFinite(v) ? v.toPrecision(7) : fmt(v)}`);
    }
    if (!any || !H.analytic) lines.push(`${(hit.b.p.title || 'value').slice(0, 24).padEnd(11)} ${own[0] === undefined ? '' : fmt(own[0], 7)}`);
    if (H.pending) lines.push(H.pending);
    if (pooled) lines.push('(largest |value| of its block: zoom in for entries)');
    tip.textContent = lines.join('\n');
    tip.style.display = 'block';
    const r = canvas.getBoundingClientRect(), rr = root.getBoundingClientRect();
    const x = hit.x + 14 + (r.left - rr.left), y = hit.y + 14 + (r.top - rr.top);
    tip.style.left = `${Math.min(x, rr.width - 260)}px`;
    tip.style.top = `${y}px`;
    requestAnimationFrame(() => { root.dataset.hoverMs = (performance.now() - t0).toFixed(1); root.dataset.hoverEntry = `${hit.i},${hit.j}`; });
  }

  function send(content, buffers) {
    try { model.send(content, undefined, buffers); } catch (e) { /* no kernel: a saved notebook */ }
  }

  let tileTimer = null;
  function requestTile(sp) {
    const p = sp.panels && sp.panels[0];
    if (!p || ((p.block || [1, 1])[0] === 1 && (p.block || [1, 1])[1] === 1)) return;
    clearTimeout(tileTimer);
    tileTimer = setTimeout(() => {
      const w = S.win, [M, N] = fullShape(sp);
      if (w.r0 === 0 && w.c0 === 0 && w.r1 === M && w.c1 === N) return;
      send({ type: 'tile', key: sp.key, r0: w.r0, r1: w.r1, c0: w.c0, c1: w.c1 });
    }, 80);
  }

  canvas.addEventListener('mousedown', (ev) => {
    ev.preventDefault();  // no focus, no scroll into view: a click only selects
    S.drag = { x: ev.clientX, y: ev.clientY, win: { ...S.win }, moved: false };
  });
  window.addEventListener('mousemove', onMove);
  window.addEventListener('mouseup', onUp);
  function onMove(ev) {
    const d = S.drag;
    if (d) {
      const dx = ev.clientX - d.x, dy = ev.clientY - d.y;
      if (Math.hypot(dx, dy) > 4) d.moved = true;
      const sp = spec(), b = S.boxes[0];
      if (d.moved && b) {  // pan the window
        const [M, N] = fullShape(sp), w = d.win;
        const sc = Math.round((-dx / b.map.w) * (w.c1 - w.c0)), sr = Math.round((-dy / b.map.h) * (w.r1 - w.r0));
        const c0 = Math.max(0, Math.min(N - (w.c1 - w.c0), w.c0 + sc)), r0 = Math.max(0, Math.min(M - (w.r1 - w.r0), w.r0 + sr));
        S.win = { r0, r1: r0 + (w.r1 - w.r0), c0, c1: c0 + (w.c1 - w.c0) };
        schedule(); requestTile(sp);
      }
      return;
    }
    if (ev.target === canvas) tooltip(ev); else if (tip.style.display !== 'none' && !root.contains(ev.target)) tip.style.display = 'none';
  }
  function onUp(ev) {
    const d = S.drag;
    S.drag = null;
    if (!d || d.moved || ev.target !== canvas) return;
    const hit = at(ev);
    if (!hit || spec().kind !== 'maps') return;
    S.localSel = [hit.i, hit.j];  // drawn at once; the kernel's selection follows
    schedule();
    send({ type: 'select', row: hit.i, col: hit.j });
  }
  canvas.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  canvas.addEventListener('wheel', (ev) => {
    const sp = spec(), hit = at(ev);
    const [M, N] = fullShape(sp);
    if (!hit || Math.max(M, N) <= TICKS_MAX) return;  // small maps: the page scrolls
    ev.preventDefault();
    const w = S.win, f = ev.deltaY > 0 ? 1.25 : 0.8;
    const nr = Math.max(4, Math.min(M, Math.round((w.r1 - w.r0) * f))), nc = Math.max(4, Math.min(N, Math.round((w.c1 - w.c0) * f)));
    const fr = (hit.i - w.r0) / (w.r1 - w.r0), fc = (hit.j - w.c0) / (w.c1 - w.c0);
    const r0 = Math.max(0, Math.min(M - nr, Math.round(hit.i - fr * nr))), c0 = Math.max(0, Math.min(N - nc, Math.round(hit.j - fc * nc)));
    S.win = { r0, r1: r0 + nr, c0, c1: c0 + nc };
    schedule(); requestTile(sp);
  }, { passive: false });
  canvas.addEventListener('dblclick', () => {
    const [M, N] = fullShape(spec());
    S.win = { r0: 0, r1: M, c0: 0, c1: N };
    schedule();
  });
  img.addEventListener('load', () => { root.dataset.image = 'loaded'; });
  img.addEventListener('error', () => { root.dataset.image = 'error'; });
  img.addEventListener('mousedown', (ev) => ev.preventDefault());
  img.addEventListener('click', (ev) => {  // a click on a picture's axes (the Landscape's plane)
    const sp = spec(), r = img.getBoundingClientRect();
    if (!img.naturalWidth) return;
    const sx = img.naturalWidth / r.width, px = (ev.clientX - r.left) * sx, py = (ev.clientY - r.top) * sx;
    for (const a of sp.axes || []) {
      const [x0, y0, x1, y1] = a.bbox;
      if (px >= x0 && px <= x1 && py >= y0 && py <= y1) {
        const x = a.xlim[0] + ((px - x0) / (x1 - x0)) * (a.xlim[1] - a.xlim[0]);
        const y = a.ylim[1] - ((py - y0) / (y1 - y0)) * (a.ylim[1] - a.ylim[0]);
        send({ type: 'click', axes: a.name, x, y });
        return;
      }
    }
  });

  // ---------------------------------------------------------------- the saved picture

  // Once the kernel's frames stop, the pane draws itself at the standard width and
  // sends the PNG: the explorer puts every view's picture in an output of its own, which
  // a saved notebook keeps whatever happens to widget state (and nbconvert shows).
  function keepPicture() {
    S.pictureTimer = null;
    const sp = spec();
    if (S.disposed || sp.kind !== 'maps') return;
    const off = document.createElement('canvas');
    paintMaps(off, 860, sp);
    off.toBlob((blob) => blob && blob.arrayBuffer().then((buf) => send({ type: 'picture', key: sp.key }, [buf])), 'image/png');
  }
  function onKernelChange() {
    root.dataset.changedAt = performance.now().toFixed(1);  // for the latency's breakdown
    S.localSel = null;
    const sp = spec();
    if (sp.kind === 'maps' && sp.key !== S.lastKey) {
      S.lastKey = sp.key;
      if (S.win && S.winKey) requestTile(sp);  // zoomed in: the window's new numbers
    }
    schedule();
    if (S.pictureTimer) clearTimeout(S.pictureTimer);
    S.pictureTimer = setTimeout(keepPicture, 900);
  }

  const TRAITS = ['spec', 'labels', 'png', 'tile', 'luts', ...SLOTS];
  for (const name of TRAITS) model.on(`change:${name}`, onKernelChange);
  const resize = new ResizeObserver(() => { if (root.clientWidth && Math.min(root.clientWidth, 860) !== S.lastWidth) schedule(); else if (root.clientWidth && !S.drawnOnce) { S.drawnOnce = true; schedule(); } });
  resize.observe(root);
  draw();
  // numbers that came before this view existed (a fast check, a restored notebook): their
  // picture is kept too (with no kernel behind the model, sending does nothing)
  if (spec().kind === 'maps') S.pictureTimer = setTimeout(keepPicture, 900);
  return () => {
    S.disposed = true;
    for (const name of TRAITS) model.off(`change:${name}`, onKernelChange);
    window.removeEventListener('mousemove', onMove);
    window.removeEventListener('mouseup', onUp);
    resize.disconnect();
    clearTimeout(tileTimer); clearTimeout(S.pictureTimer);
  };
}

export default { render };
