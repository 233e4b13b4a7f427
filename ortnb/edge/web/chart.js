// The loss chart: one SVG polyline, redrawn after each step (a few hundred points at most, so no library).
const WIDTH = 600, HEIGHT = 180, PAD = { left: 44, right: 10, top: 10, bottom: 24 };
const SVG = "http://www.w3.org/2000/svg";

function element(name, attributes, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

export function drawLoss(container, losses) {
  const svg = element("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img" });
  const finite = losses.filter(Number.isFinite);
  if (finite.length) {
    const low = Math.min(...finite), high = Math.max(...finite);
    const span = high - low || Math.abs(high) || 1;
    const x = (i) => PAD.left + (losses.length > 1 ? i / (losses.length - 1) : 0.5) * (WIDTH - PAD.left - PAD.right);
    const y = (v) => PAD.top + (1 - (v - low) / span) * (HEIGHT - PAD.top - PAD.bottom);
    const points = losses.map((v, i) => (Number.isFinite(v) ? `${x(i).toFixed(1)},${y(v).toFixed(1)}` : "")).join(" ");
    svg.append(
      element("line", { x1: PAD.left, y1: HEIGHT - PAD.bottom, x2: WIDTH - PAD.right, y2: HEIGHT - PAD.bottom, stroke: "#d0d7de" }),
      element("polyline", { points, fill: "none", stroke: "#0969da", "stroke-width": 2, class: "loss-line" }),
      element("text", { x: 4, y: PAD.top + 10, "font-size": 11, fill: "#57606a" }, high.toFixed(3)),
      element("text", { x: 4, y: HEIGHT - PAD.bottom, "font-size": 11, fill: "#57606a" }, low.toFixed(3)),
      element("text", { x: WIDTH - PAD.right, y: HEIGHT - 6, "font-size": 11, fill: "#57606a", "text-anchor": "end" },
        `step ${losses.length}`),
      element("text", { x: PAD.left, y: HEIGHT - 6, "font-size": 11, fill: "#57606a" }, "loss"),
    );
  }
  container.replaceChildren(svg);
}
