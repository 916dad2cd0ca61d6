// Animation helpers that respect prefers-reduced-motion: with reduced motion
// every tween jumps straight to its final frame (no intermediate frames).

const hasWindow = typeof window !== 'undefined' && typeof window.matchMedia === 'function';
const query = hasWindow ? window.matchMedia('(prefers-reduced-motion: reduce)') : null;
let forced = null;

/** True when animations should be skipped. */
export function reducedMotion() {
  if (forced !== null) return forced;
  return Boolean(query && query.matches);
}

/** Overrides the media query (null restores it); used by pages with a motion switch. */
export function setReducedMotion(value) {
  forced = value === null ? null : Boolean(value);
}

/** Calls fn(matches) whenever the media query changes. Returns an unsubscribe. */
export function onReducedMotionChange(fn) {
  if (!query || !query.addEventListener) return () => {};
  const h = () => fn(reducedMotion());
  query.addEventListener('change', h);
  return () => query.removeEventListener('change', h);
}

/** Counters the tests read: frames drawn mid-animation. */
export const motionStats = { tweens: 0, frames: 0, skipped: 0 };

export const ease = (t) => (t < 0.5 ? 4 * t * t * t : 1 - Math.pow(-2 * t + 2, 3) / 2);

/**
 * Runs frame(p) for p from 0 to 1 over `duration` ms (eased) and resolves when
 * done. Returns { promise, cancel }. Reduced motion: frame(1) at once.
 */
export function tween(duration, frame, { easing = ease } = {}) {
  let cancelled = false;
  let raf = 0;
  if (reducedMotion() || duration <= 0 || typeof requestAnimationFrame !== 'function') {
    motionStats.skipped++;
    frame(1);
    return { promise: Promise.resolve(true), cancel() {} };
  }
  motionStats.tweens++;
  const promise = new Promise((resolve) => {
    const t0 = performance.now();
    const step = (now) => {
      if (cancelled) return resolve(false);
      // A frame's timestamp is when the frame began, which can be before t0
      // (a tween started late in a busy frame): t < 0 would extrapolate the
      // tweened sizes below their start, to log2 of a negative (NaN in an SVG).
      const t = Math.min(1, Math.max(0, (now - t0) / duration));
      if (t < 1) motionStats.frames++;
      frame(easing(t));
      if (t < 1) raf = requestAnimationFrame(step);
      else resolve(true);
    };
    raf = requestAnimationFrame(step);
  });
  return {
    promise,
    cancel() {
      cancelled = true;
      cancelAnimationFrame(raf);
    },
  };
}

export const lerp = (a, b, t) => a + (b - a) * t;
