/**
 * The sweep ({@link jquant.distributed.DistributedSweep}) and a sharded evaluation
 * ({@link jquant.distributed.ShardedEvaluation}) as Apache Beam pipelines, run by Beam's direct runner in this JVM or
 * by its Flink runner on a Flink cluster ({@link jquant.distributed.Engine}): an existing engine shares the work out,
 * jquant schedules nothing itself. The engine's jars are the user's to provide (the launcher does), so that only the
 * commands that run a pipeline load them.
 */
package jquant.distributed;
