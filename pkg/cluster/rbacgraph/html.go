package rbacgraph

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
)

// panZoom pans (drag) and zooms (wheel, buttons) the picture by its
// viewBox, and marks the page ready with the number of nodes drawn.
const panZoom = `(function () {
  var svg = document.querySelector('#view svg');
  var b0 = svg.viewBox.baseVal, full = [b0.x, b0.y, b0.width, b0.height];
  function set(x, y, w, h) { svg.setAttribute('viewBox', x + ' ' + y + ' ' + w + ' ' + h); }
  function zoom(f, cx, cy) {
    var b = svg.viewBox.baseVal, r = svg.getBoundingClientRect();
    var px = b.x + (cx - r.left) / r.width * b.width, py = b.y + (cy - r.top) / r.height * b.height;
    set(px - (px - b.x) * f, py - (py - b.y) * f, b.width * f, b.height * f);
  }
  function centre(f) { var r = svg.getBoundingClientRect(); zoom(f, r.left + r.width / 2, r.top + r.height / 2); }
  svg.addEventListener('wheel', function (e) {
    e.preventDefault(); zoom(e.deltaY < 0 ? 0.8 : 1.25, e.clientX, e.clientY);
  }, {passive: false});
  var drag = null;
  svg.addEventListener('pointerdown', function (e) { drag = [e.clientX, e.clientY]; svg.setPointerCapture(e.pointerId); });
  svg.addEventListener('pointermove', function (e) {
    if (!drag) return;
    var b = svg.viewBox.baseVal, r = svg.getBoundingClientRect();
    var s = Math.max(b.width / r.width, b.height / r.height);
    set(b.x - (e.clientX - drag[0]) * s, b.y - (e.clientY - drag[1]) * s, b.width, b.height);
    drag = [e.clientX, e.clientY];
  });
  svg.addEventListener('pointerup', function () { drag = null; });
  document.getElementById('fit').addEventListener('click', function () { set.apply(null, full); });
  document.getElementById('in').addEventListener('click', function () { centre(0.8); });
  document.getElementById('out').addEventListener('click', function () { centre(1.25); });
  document.body.setAttribute('data-nodes', String(svg.querySelectorAll('g.node').length));
})();
`

// WriteHTML writes g as one self-contained page: the SVG inline, pan and
// zoom in an inline script that the page's Content-Security-Policy allows
// by its hash, and nothing fetched (default-src 'none'): it opens offline.
func (g *Graph) WriteHTML(w io.Writer) error {
	sum := sha256.Sum256([]byte(panZoom))
	csp := "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-" +
		base64.StdEncoding.EncodeToString(sum[:]) + "'"
	_, err := fmt.Fprintf(w, `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="%s">
<title>%s</title>
<style>
html, body { margin: 0; height: 100%%; font-family: sans-serif; }
#bar { position: fixed; top: 0; left: 0; right: 0; height: 30px; padding: 4px 8px; box-sizing: border-box;
  background: #f8fafc; border-bottom: 1px solid #cbd5e1; font-size: 13px; }
#view { position: absolute; top: 30px; left: 0; right: 0; bottom: 0; overflow: hidden; cursor: grab; }
#view svg { width: 100%%; height: 100%%; touch-action: none; }
</style>
</head>
<body>
<div id="bar"><b>%s</b> <button id="fit">fit</button> <button id="in">+</button> <button id="out">&#8722;</button>
<span>wheel: zoom, drag: pan; red: a risk, a path to more than it names (hover a box for why)</span></div>
<div id="view">
%s</div>
<script>%s</script>
</body>
</html>
`, csp, escape(g.Title), escape(g.Title), g.svg(), panZoom)
	return err
}
