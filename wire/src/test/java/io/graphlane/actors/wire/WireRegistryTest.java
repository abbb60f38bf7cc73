package io.graphlane.actors.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import io.graphlane.core.graph.LaneId;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The one registration path: a protocol's entries join the registry's, and no id or class can be given twice. */
class WireRegistryTest {

    record Ping(int n) {
    }

    static final class PingSerializer extends Serializer<Ping> {
        @Override
        public void write(Kryo kryo, Output out, Ping p) {
            out.writeInt(p.n());
        }

        @Override
        public Ping read(Kryo kryo, Input in, Class<? extends Ping> type) {
            return new Ping(in.readInt());
        }
    }

    @Test
    void aProtocolsEntriesAreRegisteredBesideTheRegistrysAndRoundTrip() {
        Kryo kryo = WireRegistry.newKryo(null, List.of(new WireRegistry.Entry(500, Ping.class, r -> new PingSerializer())));
        assertEquals(Ping.class, WireRegistry.registrations(kryo).get(500));
        assertEquals(LaneId.class, WireRegistry.registrations(kryo).get(100));
        Output out = new Output(64);
        kryo.writeClassAndObject(out, new Ping(7));
        assertEquals(new Ping(7), kryo.readClassAndObject(new Input(out.toBytes())));
    }

    @Test
    void anIdGivenTwiceIsRefusedNamingBothClasses() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> WireRegistry.newKryo(null, List.of(new WireRegistry.Entry(105, Ping.class, r -> new PingSerializer()))));
        assertEquals("wire id 105 is given to both io.graphlane.actors.lane.LaneProtocol$Resolved and "
                + Ping.class.getName(), e.getMessage());
    }

    @Test
    void aClassRegisteredTwiceOrAnIdBelowTheFirstIsRefused() {
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class, () -> WireRegistry.newKryo(null, List.of(
                new WireRegistry.Entry(500, Ping.class, r -> new PingSerializer()),
                new WireRegistry.Entry(501, Ping.class, r -> new PingSerializer()))));
        assertEquals(Ping.class.getName() + " is registered under both wire ids 500 and 501", twice.getMessage());
        IllegalArgumentException low = assertThrows(IllegalArgumentException.class,
                () -> WireRegistry.newKryo(null, List.of(new WireRegistry.Entry(99, Ping.class, r -> new PingSerializer()))));
        assertEquals("wire id 99 of " + Ping.class.getName() + " is below 100, Kryo's own ids", low.getMessage());
    }
}
