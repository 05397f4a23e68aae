/**
 * The drawing pad: white ink on a black square, drawn with a mouse, pen or finger; read out as
 * an MNIST-like 28x28 digit (the ink's bounding box scaled into 20x20, centred by its centre of
 * mass, as the MNIST digits were prepared).
 */
export class DrawingPad {
  private readonly ctx: CanvasRenderingContext2D;
  private drawing = false;
  private last: { x: number; y: number } | null = null;
  private inked = false;
  /** Called when a stroke ends. */
  onStroke: () => void = () => {};

  constructor(readonly canvas: HTMLCanvasElement) {
    this.ctx = canvas.getContext("2d", { willReadFrequently: true })!;
    this.clear();
    canvas.addEventListener("pointerdown", (e) => {
      canvas.setPointerCapture(e.pointerId);
      this.drawing = true;
      this.last = this.at(e);
      this.line(this.last, this.last);
    });
    canvas.addEventListener("pointermove", (e) => {
      if (!this.drawing) return;
      const p = this.at(e);
      this.line(this.last ?? p, p);
      this.last = p;
    });
    const end = () => {
      if (!this.drawing) return;
      this.drawing = false;
      this.last = null;
      this.onStroke();
    };
    canvas.addEventListener("pointerup", end);
    canvas.addEventListener("pointercancel", end);
  }

  private at(e: PointerEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return { x: ((e.clientX - r.left) / r.width) * this.canvas.width, y: ((e.clientY - r.top) / r.height) * this.canvas.height };
  }

  private line(a: { x: number; y: number }, b: { x: number; y: number }): void {
    const c = this.ctx;
    c.strokeStyle = "#fff";
    c.lineWidth = this.canvas.width / 12;
    c.lineCap = "round";
    c.lineJoin = "round";
    c.beginPath();
    c.moveTo(a.x, a.y);
    c.lineTo(b.x + 0.01, b.y);
    c.stroke();
    this.inked = true;
  }

  clear(): void {
    this.ctx.fillStyle = "#000";
    this.ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    this.inked = false;
  }

  get empty(): boolean {
    return !this.inked;
  }

  /** Shows a 28x28 digit (pixels in [0, 1]) on the pad, scaled up. */
  show(pixels: Float32Array): void {
    const small = document.createElement("canvas");
    small.width = small.height = 28;
    const sctx = small.getContext("2d")!;
    const img = sctx.createImageData(28, 28);
    for (let i = 0; i < 784; i++) {
      const v = Math.round(pixels[i]! * 255);
      img.data.set([v, v, v, 255], i * 4);
    }
    sctx.putImageData(img, 0, 0);
    this.clear();
    this.ctx.imageSmoothingEnabled = false;
    this.ctx.drawImage(small, 0, 0, this.canvas.width, this.canvas.height);
    this.inked = true;
  }

  /** The drawing as an MNIST-like digit: 784 values in [0, 1], row-major; null when nothing is drawn. */
  toDigit(): Float32Array | null {
    const { width: w, height: h } = this.canvas;
    const data = this.ctx.getImageData(0, 0, w, h).data;
    let x0 = w, y0 = h, x1 = -1, y1 = -1;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        if (data[(y * w + x) * 4]! > 25) {
          if (x < x0) x0 = x;
          if (x > x1) x1 = x;
          if (y < y0) y0 = y;
          if (y > y1) y1 = y;
        }
      }
    }
    if (x1 < 0) return null;
    const bw = x1 - x0 + 1, bh = y1 - y0 + 1;
    const scale = 20 / Math.max(bw, bh);
    const dw = Math.max(1, Math.round(bw * scale)), dh = Math.max(1, Math.round(bh * scale));
    const small = document.createElement("canvas");
    small.width = small.height = 28;
    const sctx = small.getContext("2d", { willReadFrequently: true })!;
    sctx.fillStyle = "#000";
    sctx.fillRect(0, 0, 28, 28);
    sctx.imageSmoothingEnabled = true;
    sctx.imageSmoothingQuality = "high";
    sctx.drawImage(this.canvas, x0, y0, bw, bh, Math.floor((28 - dw) / 2), Math.floor((28 - dh) / 2), dw, dh);
    const px = sctx.getImageData(0, 0, 28, 28).data;
    const g = new Float32Array(784);
    let mass = 0, mx = 0, my = 0;
    for (let i = 0; i < 784; i++) {
      const v = px[i * 4]! / 255;
      g[i] = v;
      mass += v;
      mx += v * (i % 28);
      my += v * Math.floor(i / 28);
    }
    // centre of mass to the centre
    const sx = Math.round(13.5 - mx / mass), sy = Math.round(13.5 - my / mass);
    const out = new Float32Array(784);
    for (let y = 0; y < 28; y++) {
      for (let x = 0; x < 28; x++) {
        const fx = x - sx, fy = y - sy;
        if (fx >= 0 && fx < 28 && fy >= 0 && fy < 28) out[y * 28 + x] = g[fy * 28 + fx]!;
      }
    }
    return out;
  }
}
