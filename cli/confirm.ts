import { createInterface } from 'node:readline/promises';

/**
 * Asks a person at a terminal to type `yes` before something that cannot be undone: prints `question` (one line, ending
 * with `Type yes to continue: `) to stderr and reads one line from stdin. Resolves true only for `yes` (trimmed, any
 * case); false for anything else, an empty line or end of input. Never asks when stdin is not a terminal (a script, a
 * pipe, CI): resolves false at once, so unattended destruction needs the command's explicit `--yes`.
 */
export async function confirmAtTerminal(question: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Promise<boolean> {
  if (!input.isTTY) return false;
  const prompt = createInterface({ input, output, terminal: false });
  try {
    const answer = await new Promise<string>((resolve) => {
      prompt.once('close', () => resolve(''));
      void prompt.question(`${question} Type yes to continue: `).then(resolve, () => resolve(''));
    });
    return answer.trim().toLowerCase() === 'yes';
  } finally {
    prompt.close();
  }
}
