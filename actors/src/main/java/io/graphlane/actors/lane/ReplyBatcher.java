package io.graphlane.actors.lane;

import io.graphlane.actors.lane.LaneProtocol.Batch;
import io.graphlane.actors.lane.LaneProtocol.LaneReply;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Collects the replies one step of a lane actor produces and sends them as one message per
 * receiver: the reply itself when there is one, a {@link Batch} in order when there are several.
 * Used only from the actor's own thread.
 */
final class ReplyBatcher {
    private ActorRef<LaneReply> firstTo;
    private ArrayList<LaneReply> first = new ArrayList<>();
    private Map<ActorRef<LaneReply>, ArrayList<LaneReply>> others;

    /** Queues {@code reply} for {@code to}. */
    void add(ActorRef<LaneReply> to, LaneReply reply) {
        if (firstTo == null || firstTo.equals(to)) {
            firstTo = to;
            first.add(reply);
            return;
        }
        if (others == null) {
            others = new LinkedHashMap<>();
        }
        others.computeIfAbsent(to, k -> new ArrayList<>()).add(reply);
    }

    /** Sends what was queued and forgets it. */
    void flush() {
        if (firstTo == null) {
            return;
        }
        if (first.size() == 1) {
            firstTo.tell(first.get(0));
            first.clear();
        } else {
            send(firstTo, first);
            first = new ArrayList<>();
        }
        firstTo = null;
        if (others != null) {
            others.forEach(ReplyBatcher::send);
            others = null;
        }
    }

    private static void send(ActorRef<LaneReply> to, ArrayList<LaneReply> replies) {
        to.tell(replies.size() == 1 ? replies.get(0) : new Batch(replies));
    }
}
