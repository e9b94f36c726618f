/**
 * A job's branch: its place in the agent tree as one dotted name, `<parent-branch>.bg.<name>`
 * (the seed's composeBranch). A top-level job's parent branch is empty (`bg.scout`); a job its job
 * spawned nests under it (`bg.scout.bg.reader`). An audit trail in the record, events, transcript
 * and the ledger's transitions — not a git branch.
 */

/** The segment a job adds: its name, else its agent, else its id; a `.` in it becomes `-`, so a branch splits unambiguously. */
export function branchSegment(job: { name?: string | undefined; agent?: string | undefined; id: string }): string {
  const segment = (job.name ?? job.agent ?? job.id).trim() || job.id;
  return segment.replace(/\./g, '-').replace(/\s+/g, '_');
}

/** `<parent>.bg.<segment>`, or `bg.<segment>` under the top-level parent (empty `parent`). */
export function composeBranch(parent: string, segment: string): string {
  return parent ? `${parent}.bg.${segment}` : `bg.${segment}`;
}
