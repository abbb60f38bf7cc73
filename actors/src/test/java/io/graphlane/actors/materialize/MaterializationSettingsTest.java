package io.graphlane.actors.materialize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import org.junit.jupiter.api.Test;

/** The supervisor's bounds as configured: reference.conf documents the defaults, an application overrides them. */
class MaterializationSettingsTest {

    @Test
    void referenceConfHoldsTheDefaults() {
        assertEquals(MaterializationSettings.DEFAULTS, MaterializationSettings.fromConfig(ConfigFactory.load()));
        assertEquals(new MaterializationSettings(4, 64, java.time.Duration.ofHours(1)), MaterializationSettings.DEFAULTS);
    }

    @Test
    void applicationOverridesAreRead() {
        var config = ConfigFactory.parseString("graphlane.materialization { max-active-units = 2, max-queued-units = 0, unit-timeout = 3s }")
                .withFallback(ConfigFactory.load());
        assertEquals(new MaterializationSettings(2, 0, java.time.Duration.ofSeconds(3)), MaterializationSettings.fromConfig(config));
    }

    @Test
    void aUnitTimeoutThatIsNotPositiveIsRefusedNamingTheKey() {
        var config = ConfigFactory.parseString("graphlane.materialization.unit-timeout = 0s").withFallback(ConfigFactory.load());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MaterializationSettings.fromConfig(config));
        assertTrue(e.getMessage().contains("graphlane.materialization.unit-timeout") && e.getMessage().contains("found PT0S"), e.getMessage());
    }

    @Test
    void aBoundBelowItsMinimumIsRefusedNamingTheKey() {
        var config = ConfigFactory.parseString("graphlane.materialization.max-active-units = 0").withFallback(ConfigFactory.load());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MaterializationSettings.fromConfig(config));
        assertTrue(e.getMessage().contains("graphlane.materialization.max-active-units") && e.getMessage().contains("found 0"), e.getMessage());
    }
}
