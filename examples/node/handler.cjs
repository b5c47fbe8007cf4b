// Quick start, Node handler module for the worker command: no worker code of your own.
//   npx emq-worker ./handler.cjs --queue emails --concurrency 4
// runs it until SIGINT or SIGTERM (then finishes the jobs it is running and exits); logs go to
// stderr; `npx emq-worker --help` lists the options. The datastore is --url, else EMQ_URL, else
// redis://127.0.0.1:6379. The default export is the handler (an ES module's `export default` or
// `export async function handler` works too).
module.exports = async (job) => {
  // job: { id, name, data, attemptsMade, attempts, signal, updateProgress(p), log(line) }
  await job.log(`sending to ${job.data.to}`);
  return { sent: job.data.to }; // the job's result
};
