import type { Progress } from './commands.ts';

const FRAMES = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';

/** A spinner with a status line on a terminal; silent when the output goes to a file or a pipe. */
export function progressOn(stream: NodeJS.WriteStream): Progress {
  if (!stream.isTTY) return { update: () => {}, done: () => {} };
  let frame = 0;
  let text = '';
  const timer = setInterval(() => draw(), 120);
  timer.unref();
  const draw = () => {
    frame = (frame + 1) % FRAMES.length;
    stream.write(`\r${FRAMES[frame]} ${text}\u001b[K`);
  };
  return {
    update(next) {
      text = next;
      draw();
    },
    done() {
      clearInterval(timer);
      stream.write('\r\u001b[K');
    },
  };
}
