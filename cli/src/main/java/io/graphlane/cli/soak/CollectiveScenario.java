package io.graphlane.cli.soak;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.collective.CollectiveException;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveGroup;
import io.graphlane.backend.cpu.collective.CpuCollectives;
import io.graphlane.backend.cpu.collective.ReduceOp;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.backend.CollectiveBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.bytedeco.javacpp.Pointer;

/**
 * An in-process CPU collective group of 2–4 members (one CPU lane each) running a random sequence
 * of all-reduces (sum, min, max), all-gathers (zero rows included) and all-to-alls (variable
 * counts), by reference or copying in small chunks, with a member lost at a seeded point: it fails
 * in the middle of a collective (one of its sends throws), leaves before one, or stops before one
 * without a word (found absent by the others' timeout, which the {@link VirtualTimeTransport} fires
 * only once every member with work is stuck). Checks: every operation of every member ends; every
 * survivor's collectives before the loss give exact results and leave their input unchanged, and
 * from the loss on fail naming the lost member; nothing times out unless a member stopped; the
 * values retained by the operations are released exactly once after their exact completions; every
 * tensor made is freed (native memory back where it was); and a fresh group on fresh lanes then works.
 */
final class CollectiveScenario {
    private static final AtomicInteger NAMES = new AtomicInteger();
    /** Long enough never to fire in wall-clock time: the transport fires timeouts in virtual time. */
    private static final Duration MEMBER_TIMEOUT = Duration.ofMinutes(10);
    private static final ReduceOp[] REDUCTIONS = {ReduceOp.SUM, ReduceOp.MIN, ReduceOp.MAX};

    /** How the member is lost. */
    enum Loss { NONE, FAILS_MID, LEAVES, STOPS }

    /** One planned collective: kind 0 all-reduce of rows × cols, 1 all-gather of gatherRows[r] × cols, 2 all-to-all of counts[r][j] rows. */
    private record Op(int kind, ReduceOp reduce, int rows, int cols, int[] gatherRows, int[][] counts) {
        String describe() {
            return switch (kind) {
                case 0 -> "all-reduce " + reduce + " " + rows + "x" + cols;
                case 1 -> "all-gather rows " + Arrays.toString(gatherRows) + " x" + cols;
                default -> "all-to-all counts " + Arrays.deepToString(counts) + " x" + cols;
            };
        }

        int inputRows(int member) {
            return switch (kind) {
                case 0 -> rows;
                case 1 -> gatherRows[member];
                default -> Arrays.stream(counts[member]).sum();
            };
        }
    }

    /** One member's submitted collective. */
    private static final class Submitted {
        final int member;
        final int index;
        final CpuTensor input;
        final float[] inputValues;
        final CollectiveBackend.Result<CpuTensor> result;

        Submitted(int member, int index, CpuTensor input, float[] inputValues, CollectiveBackend.Result<CpuTensor> result) {
            this.member = member;
            this.index = index;
            this.input = input;
            this.inputValues = inputValues;
            this.result = result;
        }
    }

    private final ScenarioRun run;
    private static final CpuNeuralOps OPS = new CpuNeuralOps();

    CollectiveScenario(ScenarioRun run) {
        this.run = run;
    }

    void play(FaultInjector injector) {
        SplittableRandom rnd = run.random();
        int size = 2 + rnd.nextInt(3);
        int count = 1 + rnd.nextInt(6);
        boolean byReference = rnd.nextBoolean();
        int chunk = 1 + rnd.nextInt(16);
        List<Op> plan = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            plan.add(planOp(rnd, size));
        }
        int pick = rnd.nextInt(100);
        Loss loss = pick < 10 ? Loss.NONE : pick < 45 ? Loss.FAILS_MID : pick < 70 ? Loss.LEAVES : Loss.STOPS;
        int lost = rnd.nextInt(size);
        int at = rnd.nextInt(count);
        long failAtSend = loss == Loss.FAILS_MID ? rnd.nextInt(1 + 3 * size * count) : -1;
        String name = "soak-group-" + NAMES.incrementAndGet();
        run.note(name + ": " + size + " members, " + (byReference ? "by reference" : "copying in chunks of " + chunk) + ", ops "
                + plan.stream().map(Op::describe).toList() + ", loss " + loss + " of member " + lost
                + (loss == Loss.FAILS_MID ? " at its send " + failAtSend : loss == Loss.NONE ? "" : " at op " + at));

        long nativeBefore = Pointer.totalBytes();
        CpuBackend backend = new CpuBackend(name);
        try {
            List<CpuExecutor> lanes = backend.forkExecutors(backend.rootExecutor(), size);
            VirtualTimeTransport transport = new VirtualTimeTransport(size, byReference, loss == Loss.FAILS_MID ? lost : -1, failAtSend);
            CpuCollectiveGroup group = CpuCollectiveGroup.over(name, lanes, new CollectiveSettings(MEMBER_TIMEOUT, chunk), transport);
            CpuCollectives collectives = new CpuCollectives(backend);
            List<List<Submitted>> submitted = new ArrayList<>();
            List<Completion> all = new ArrayList<>();
            List<List<Completion>> perMember = new ArrayList<>();
            for (int r = 0; r < size; r++) {
                List<Submitted> mine = new ArrayList<>();
                List<Completion> mineDone = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    if (r == lost && i == at && loss == Loss.LEAVES) {
                        Completion left = collectives.leave(group, lanes.get(r), new IllegalStateException("member " + r + " lost (soak fault)"));
                        mineDone.add(left);
                        break;
                    }
                    if (r == lost && i == at && loss == Loss.STOPS) {
                        mineDone.add(backend.shutdownExecutor(lanes.get(r))); // stopped: takes part in nothing more
                        break;
                    }
                    Submitted s = submit(collectives, group, lanes.get(r), r, i, plan.get(i));
                    mine.add(s);
                    mineDone.add(s.result.completion());
                }
                submitted.add(mine);
                perMember.add(mineDone);
                all.addAll(mineDone);
            }
            injector.inject(run);
            for (Completion c : all) {
                c.whenDone(o -> transport.wake());
            }
            int fired = drive(transport, perMember, all, "collective group " + name);
            if (fired > 0 && loss != Loss.STOPS) {
                run.problem(name + ": every member with work was stuck waiting " + fired + " times although no member stopped");
            } else if (fired > 1) {
                run.problem(name + ": " + fired + " timeouts fired; the first one should have told every member");
            }
            if (all.stream().allMatch(Completion::isDone)) {
                check(name, plan, submitted, loss, lost, at, transport.failed());
            }
            freshGroupWorks(backend, collectives, size, byReference, chunk, name);
        } finally {
            Completion stopped = backend.shutdown();
            stopped.whenDone(o -> run.wake());
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (!stopped.isDone() && System.nanoTime() < deadline && !run.wallExpired()) {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
            if (!stopped.isDone()) {
                run.hung(name + ": the CPU lanes did not stop");
            }
        }
        long nativeAfter = Pointer.totalBytes();
        if (nativeAfter > nativeBefore) {
            run.problem(name + ": " + (nativeAfter - nativeBefore) + " bytes of native memory allocated during the scenario were never freed");
        }
    }

    private static Op planOp(SplittableRandom rnd, int size) {
        int kind = rnd.nextInt(3);
        int cols = 1 + rnd.nextInt(5);
        return switch (kind) {
            case 0 -> new Op(0, REDUCTIONS[rnd.nextInt(REDUCTIONS.length)], 1 + rnd.nextInt(6), cols, null, null);
            case 1 -> {
                int[] rows = new int[size];
                for (int r = 0; r < size; r++) {
                    rows[r] = rnd.nextInt(4);
                }
                yield new Op(1, null, 0, cols, rows, null);
            }
            default -> {
                int[][] counts = new int[size][size];
                for (int r = 0; r < size; r++) {
                    for (int j = 0; j < size; j++) {
                        counts[r][j] = rnd.nextInt(3);
                    }
                }
                yield new Op(2, null, 0, cols, null, counts);
            }
        };
    }

    /** Member {@code member}'s input value {@code k} of collective {@code index}: small integers, so every sum is exact. */
    private static float value(int member, int index, int k) {
        return ((member * 31 + index * 17 + k * 7) % 13) - 6;
    }

    private Submitted submit(CpuCollectives collectives, CpuCollectiveGroup group, CpuExecutor lane, int member, int index, Op op) {
        int rows = op.inputRows(member);
        float[] values = new float[rows * op.cols()];
        for (int k = 0; k < values.length; k++) {
            values[k] = value(member, index, k);
        }
        CpuTensor input = OPS.fromHost(values, rows, op.cols());
        CollectiveBackend.Result<CpuTensor> result = switch (op.kind()) {
            case 0 -> collectives.allReduce(input, op.reduce(), group, lane);
            case 1 -> collectives.allGather(input, group, lane);
            default -> collectives.allToAll(input, op.counts()[member], group, lane);
        };
        // A value retained by the operation, recorded so the ledger proves it is released once, after the exact completion.
        collectives.backend().retainUntilComplete(lane, (CpuCompletion) result.completion(),
                run.ledger().retain(group.name() + "/m" + member + "/op" + index, result.completion()));
        return new Submitted(member, index, input, values, result);
    }

    /** Waits until every completion ended, firing a timeout when every member with work is stuck; returns the timeouts fired. */
    private int drive(VirtualTimeTransport transport, List<List<Completion>> perMember, List<Completion> all, String what) {
        int fired = 0;
        while (!all.stream().allMatch(Completion::isDone)) {
            if (run.wallExpired()) {
                List<Integer> running = new ArrayList<>();
                for (int r = 0; r < perMember.size(); r++) {
                    if (!perMember.get(r).stream().allMatch(Completion::isDone)) {
                        running.add(r);
                    }
                }
                run.hung(what + ": members " + running + " still running at the wall-clock guard");
                transport.giveUp();
                return fired;
            }
            int member = transport.fireIfStuck(r -> !perMember.get(r).stream().allMatch(Completion::isDone));
            if (member >= 0) {
                fired++;
                run.note(what + ": every member with work is waiting; member " + member + "'s wait timed out");
                continue;
            }
            try {
                transport.awaitChange(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                run.hung(what + ": interrupted");
                return fired;
            }
        }
        return fired;
    }

    private void check(String name, List<Op> plan, List<List<Submitted>> submitted, Loss loss, int lost, int at, boolean failedMid) {
        int size = submitted.size();
        // The first collective that cannot succeed everywhere: where the member left or stopped, or where its send failed.
        int firstLost = switch (loss) {
            case NONE -> Integer.MAX_VALUE;
            case LEAVES, STOPS -> at;
            case FAILS_MID -> failedMid ? firstFailure(submitted.get(lost)) : Integer.MAX_VALUE;
        };
        if (loss == Loss.FAILS_MID && failedMid && firstLost == Integer.MAX_VALUE) {
            run.problem(name + ": member " + lost + "'s send failed, but none of its collectives failed");
        }
        for (int r = 0; r < size; r++) {
            for (Submitted s : submitted.get(r)) {
                Outcome outcome = s.result.completion().outcome().orElseThrow();
                String where = name + " member " + r + " op " + s.index + " (" + plan.get(s.index).describe() + ")";
                if (s.input.isReleased()) {
                    run.problem(where + ": its input was freed by the collective");
                } else {
                    float[] now = new float[s.inputValues.length];
                    OPS.toHost(s.input, now);
                    if (!Arrays.equals(now, s.inputValues)) {
                        run.problem(where + ": its input was changed");
                    }
                    OPS.release(s.input);
                }
                boolean survivor = r != lost || loss == Loss.NONE;
                if (outcome instanceof Outcome.Failed failed) {
                    // A member that leaves or fails tells the others at once, and fails their current collective too:
                    // a survivor still finishing the one before the loss (which the lost member completed) may fail it.
                    int mayFailFrom = loss == Loss.STOPS ? firstLost : firstLost - 1;
                    if (s.index < mayFailFrom) {
                        run.problem(where + ": failed before any member was lost: " + failed.cause());
                    } else if (survivor && !namesMember(failed.cause(), lost)) {
                        run.problem(where + ": failed without naming lost member " + lost + ": " + failed.cause());
                    }
                } else {
                    CpuTensor out = s.result.value();
                    if (s.index > firstLost || (s.index == firstLost && loss != Loss.FAILS_MID)) {
                        run.problem(where + ": succeeded although member " + lost + " was lost at op " + firstLost);
                    } else {
                        float[] expected = expected(plan.get(s.index), s.index, r, size);
                        float[] got = new float[expected.length];
                        if (out.rows() * out.cols() != expected.length) {
                            run.problem(where + ": result is " + out + ", expected " + expected.length + " values");
                        } else {
                            OPS.toHost(out, got);
                            if (!Arrays.equals(got, expected)) {
                                run.problem(where + ": result " + Arrays.toString(got) + ", expected " + Arrays.toString(expected));
                            }
                        }
                    }
                    if (out.isReleased()) {
                        run.problem(where + ": its result was freed before its caller released it");
                    } else {
                        OPS.release(out);
                    }
                }
            }
        }
    }

    private static int firstFailure(List<Submitted> mine) {
        for (Submitted s : mine) {
            if (s.result.completion().outcome().orElseThrow() instanceof Outcome.Failed) {
                return s.index;
            }
        }
        return Integer.MAX_VALUE;
    }

    /** Whether the first collective failure in {@code cause}'s chain names {@code member} as the one at fault. */
    private static boolean namesMember(Throwable cause, int member) {
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof CollectiveException c) {
                return c.member() == member;
            }
        }
        return false;
    }

    /** What member {@code r} must receive from collective {@code index}. */
    private static float[] expected(Op op, int index, int r, int size) {
        int cols = op.cols();
        switch (op.kind()) {
            case 0 -> {
                float[] out = new float[op.rows() * cols];
                for (int k = 0; k < out.length; k++) {
                    float acc = value(0, index, k);
                    for (int m = 1; m < size; m++) {
                        float v = value(m, index, k);
                        acc = switch (op.reduce()) {
                            case MIN -> Math.min(acc, v);
                            case MAX -> Math.max(acc, v);
                            default -> acc + v;
                        };
                    }
                    out[k] = acc;
                }
                return out;
            }
            case 1 -> {
                float[] out = new float[Arrays.stream(op.gatherRows()).sum() * cols];
                int at = 0;
                for (int m = 0; m < size; m++) {
                    for (int k = 0; k < op.gatherRows()[m] * cols; k++) {
                        out[at++] = value(m, index, k);
                    }
                }
                return out;
            }
            default -> {
                int rows = 0;
                for (int m = 0; m < size; m++) {
                    rows += op.counts()[m][r];
                }
                float[] out = new float[rows * cols];
                int at = 0;
                for (int m = 0; m < size; m++) {
                    int start = 0;
                    for (int j = 0; j < r; j++) {
                        start += op.counts()[m][j];
                    }
                    for (int k = start * cols; k < (start + op.counts()[m][r]) * cols; k++) {
                        out[at++] = value(m, index, k);
                    }
                }
                return out;
            }
        }
    }

    /** After the loss, a new group on fresh lanes all-reduces correctly. */
    private void freshGroupWorks(CpuBackend backend, CpuCollectives collectives, int size, boolean byReference, int chunk, String name) {
        if (run.wallExpired()) {
            return;
        }
        String fresh = name + "-fresh";
        List<CpuExecutor> lanes = backend.forkExecutors(backend.rootExecutor(), size);
        VirtualTimeTransport transport = new VirtualTimeTransport(size, byReference, -1, -1);
        CpuCollectiveGroup group = CpuCollectiveGroup.over(fresh, lanes, new CollectiveSettings(MEMBER_TIMEOUT, chunk), transport);
        Op op = new Op(0, ReduceOp.SUM, 2, 3, null, null);
        List<Submitted> subs = new ArrayList<>();
        List<List<Completion>> perMember = new ArrayList<>();
        List<Completion> all = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            Submitted s = submit(collectives, group, lanes.get(r), r, 0, op);
            subs.add(s);
            perMember.add(List.of(s.result.completion()));
            all.add(s.result.completion());
            s.result.completion().whenDone(o -> transport.wake());
        }
        int fired = drive(transport, perMember, all, "fresh group " + fresh);
        if (fired > 0) {
            run.problem(fresh + ": a fresh group after the loss got stuck (" + fired + " timeouts)");
        }
        if (!all.stream().allMatch(Completion::isDone)) {
            return;
        }
        List<List<Submitted>> bySubmitter = new ArrayList<>();
        for (Submitted s : subs) {
            bySubmitter.add(List.of(s));
        }
        check(fresh, List.of(op), bySubmitter, Loss.NONE, -1, -1, false);
    }
}
