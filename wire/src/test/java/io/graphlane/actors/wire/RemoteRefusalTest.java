package io.graphlane.actors.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.actors.lane.LaneProtocol;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.junit.jupiter.api.Test;

/** Two actor systems over Artery on loopback: bad frames (a length bomb among them) from one node are dropped by the other, which stays up. */
class RemoteRefusalTest {
    private static Config remote(String extra) {
        return ConfigFactory.parseString("""
                pekko.actor.provider = remote
                pekko.remote.artery.canonical.hostname = 127.0.0.1
                pekko.remote.artery.canonical.port = 0
                pekko.loglevel = WARNING
                """ + extra).withFallback(ConfigFactory.load());
    }

    @Test
    void truncatedUnknownAndLengthBombFramesAreDroppedAndLaterMessagesStillArrive() {
        ActorTestKit receiver = ActorTestKit.create("receiver", remote(""));
        ActorTestKit sender = ActorTestKit.create("sender",
                remote("pekko.actor.serializers.graphlane-kryo = \"io.graphlane.actors.wire.CorruptingWireSerializer\""));
        try {
            TestProbe<LaneProtocol.Cancel> probe = receiver.createTestProbe();
            String path = ActorRefResolver.get(receiver.system()).toSerializationFormat(probe.getRef());
            ActorRef<LaneProtocol.Cancel> remoteProbe = ActorRefResolver.get(sender.system()).resolveActorRef(path);

            remoteProbe.tell(new LaneProtocol.Cancel(-1)); // truncated frame
            remoteProbe.tell(new LaneProtocol.Cancel(-2)); // unknown class id
            remoteProbe.tell(new LaneProtocol.Cancel(-3)); // a tensor declaring 2^31-1 bytes
            remoteProbe.tell(new LaneProtocol.Cancel(7));
            remoteProbe.tell(new LaneProtocol.Cancel(8));

            // Artery keeps order between two nodes: had a bad frame been delivered, it would arrive first.
            assertEquals(new LaneProtocol.Cancel(7), probe.receiveMessage(Duration.ofSeconds(20)));
            assertEquals(new LaneProtocol.Cancel(8), probe.receiveMessage(Duration.ofSeconds(5)));
            assertFalse(receiver.system().whenTerminated().isCompleted(), "the receiving node stays up");
        } finally {
            sender.shutdownTestKit();
            receiver.shutdownTestKit();
        }
    }
}
