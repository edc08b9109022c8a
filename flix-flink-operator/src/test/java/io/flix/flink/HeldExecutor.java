package io.flix.flink;

import org.apache.flink.streaming.runtime.tasks.mailbox.Mail;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailbox;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import java.util.concurrent.Executor;

/**
 * An operator's worker under a test's control, so that no test depends on timing: while it holds, every task it is
 * given waits until {@link #runHeld()}; released, it runs each task at once on the caller's thread. Either way a
 * task's completion, posted to the task's mailbox, takes effect only when the test's thread runs the mail
 * ({@link #runMails}) or the operator yields to its mailbox.
 */
public final class HeldExecutor implements Executor {

    private final Deque<Runnable> held = new ArrayDeque<>();
    private boolean holding = true;
    private int executed;

    @Override
    public void execute(Runnable task) {
        if (holding) {
            held.add(task);
        } else {
            executed++;
            task.run();
        }
    }

    /** Tasks given and not run yet. */
    public int held() {
        return held.size();
    }

    /** Tasks run so far. */
    public int executed() {
        return executed;
    }

    /** Runs the held tasks, in the order given, on this thread; later tasks are held still. */
    public void runHeld() {
        Runnable task;
        while ((task = held.poll()) != null) {
            executed++;
            task.run();
        }
    }

    /** Runs the held tasks and every later one at once. */
    public void release() {
        holding = false;
        runHeld();
    }

    /** Holds the tasks given from now on. */
    public void hold() {
        holding = true;
    }

    /** Runs the mails the harness's task has, on this thread (the task's); returns how many ran. */
    public static int runMails(AbstractStreamOperatorTestHarness<?> harness) throws Exception {
        final TaskMailbox mailbox = harness.getTaskMailbox();
        int ran = 0;
        Optional<Mail> mail;
        while ((mail = mailbox.tryTake(TaskMailbox.MIN_PRIORITY)).isPresent()) {
            mail.get().run();
            ran++;
        }
        return ran;
    }
}
