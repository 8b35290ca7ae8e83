/**
 * A piece of work started now and judged later, by a test that awaits the function returned:
 * its failure is kept until then (never an unhandled rejection), and every call answers the
 * same outcome.
 */
export function started<T>(work: Promise<T>): () => Promise<T> {
  const settled = work.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  return async () => {
    const s = await settled;
    if ('error' in s) throw s.error;
    return s.value;
  };
}
