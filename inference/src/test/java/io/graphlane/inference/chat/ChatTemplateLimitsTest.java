package io.graphlane.inference.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Hostile chat templates: each is refused with a message naming the limit it went past, rather than running on, eating
 * the heap or reading files; and the constructs real templates use still render as before.
 */
class ChatTemplateLimitsTest {
    /**
     * A megabyte of output, so that each size refusal comes at once, and a render time none of these renders reaches
     * first: they must stop at the limit they test.
     */
    private static final ChatTemplateLimits SMALL = ChatTemplateLimits.defaults().withMaxOutputChars(1 << 20)
            .withRenderCpuTime(Duration.ofSeconds(20));
    /** A fifth of a second of CPU to render, for the renders that only the clock stops. */
    private static final ChatTemplateLimits TIMED = SMALL.withRenderCpuTime(Duration.ofMillis(200));
    private static final List<ChatMessage> HELLO = List.of(new ChatMessage("user", "Hello!"));
    /** Bounds each hostile render, so a limit that does not hold fails the test instead of hanging it. */
    private static final Duration HANG_GUARD = Duration.ofSeconds(30);

    private static String refusal(String template) {
        return refusal(template, SMALL);
    }

    private static String refusal(String template, ChatTemplateLimits limits) {
        ChatTemplate t = new ChatTemplate(template, "<s>", "</s>", limits);
        return assertTimeoutPreemptively(HANG_GUARD,
                () -> assertThrows(ChatTemplateException.class, () -> t.render(HELLO, true),
                        template.substring(0, Math.min(80, template.length()))).getMessage());
    }

    private static void assertMentions(String message, String... parts) {
        for (String part : parts) {
            assertTrue(message.contains(part), "'" + part + "' in: " + message);
        }
    }

    @Test
    void nestedRangesStopAtTheRenderTimeLimit() {
        String message = refusal("{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}x{% endfor %}"
                + "{% endfor %}{% endfor %}", TIMED);
        assertMentions(message, "limit of 200 ms of CPU time");
    }

    @Test
    void aStringDoubledEveryStepStopsAtTheOutputLimit() {
        assertMentions(refusal("{% set s = 'ab' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s }}"),
                "limit of 1048576 characters");
        assertMentions(refusal("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}"
                + "{{ ns.s }}"), "limit of 1048576 characters");
        // The engine would only warn and cut the joined text short; a cut prompt is refused instead.
        assertMentions(refusal("{% set s = 'ab' %}{% for i in range(40) %}{% set s = [s, s]|join %}{% endfor %}{{ s|length }}"),
                "limit of 1048576 characters");
    }

    @Test
    void aStringMethodThatWouldGrowPastTheLimitIsRefusedBeforeItRuns() {
        assertMentions(refusal("{% set ns = namespace(s='xy') %}{% for i in range(40) %}{% set ns.s = ns.s.replace('x', 'xx') %}"
                + "{% endfor %}{{ ns.s|length }}"), "replace", "limit of 1048576 characters");
        // Java's own string builders are no Python string methods: no template written for jinja2 calls them.
        assertMentions(refusal("{{ 'x'.repeat(2000000000)|length }}"), "repeat");
        assertMentions(refusal("{% set ns = namespace(s='xy') %}{% for i in range(40) %}{% set ns.s = ns.s.concat(ns.s) %}"
                + "{% endfor %}"), "concat");
    }

    @Test
    void filtersSizedByAnArgumentAreCheckedBeforeTheyAllocate() {
        assertMentions(refusal("{{ 'x'|center(2000000000) }}"), "center", "2000000000");
        assertMentions(refusal("{{ 'a\nb'|indent(2000000000) }}"), "indent", "limit of 1048576 characters");
        assertMentions(refusal("{{ '%2000000000s'|format('x') }}"), "format", "limit of 1048576 characters");
        assertMentions(refusal("{{ [1, 2]|batch(2000000000, 0)|length }}"), "batch", "2000000000");
    }

    @Test
    void aRangeLongerThanTheLimitIsRefusedRatherThanCutShort() {
        assertMentions(refusal("{% for i in range(2000000000) %}{% endfor %}"), "range of 2000000000 numbers",
                "limit of " + ChatTemplateLimits.DEFAULT_MAX_RANGE);
    }

    @Test
    void aRangeOverALongConversationRendersEveryMessage() {
        // The engine's own range stops at 1000 numbers without a word, which dropped the rest of a conversation a
        // template walks by index.
        List<ChatMessage> messages = new ArrayList<>();
        StringBuilder expected = new StringBuilder();
        for (int i = 0; i < 1500; i++) {
            messages.add(new ChatMessage("user", "m" + i));
            expected.append("m").append(i).append(';');
        }
        ChatTemplate t = new ChatTemplate("{% for i in range(0, messages|length) %}{{ messages[i]['content'] }};{% endfor %}", "", "",
                SMALL);
        assertEquals(expected.toString(), t.render(messages, true));
    }

    @Test
    void aMacroCallingItselfWithoutEndStopsAtTheDepthLimit() {
        assertMentions(refusal("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
                "macros deeper than its limit of " + ChatTemplateLimits.DEFAULT_MAX_MACRO_DEPTH);
        // Fanning out within the depth limit: 2^40 calls, stopped by the clock.
        assertMentions(refusal("{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}",
                TIMED), "limit of 200 ms of CPU time");
    }

    @Test
    void blocksNestedPastTheStackAreRefusedAsTooDeep() {
        String deep = "{% if true %}".repeat(20_000) + "x" + "{% endif %}".repeat(20_000);
        assertMentions(refusal(deep), "too deeply");
    }

    @Test
    void aTemplateLoadsNoOtherTemplateNorAnyFile() {
        // Each names a file on the test classpath, which the engine's default loader would have rendered.
        for (String tag : List.of("{% include 'tiny-chat/tokenizer_config.json' %}", "{% import 'tiny-chat/reference.json' as r %}",
                "{% from 'tiny-chat/reference.json' import x %}", "{% extends 'tiny-chat/tokenizer_config.json' %}")) {
            String name = tag.substring(3, tag.indexOf(' ', 3));
            assertMentions(refusal(tag), "'" + name + "'", "must stand alone");
        }
    }

    @Test
    void theConstructsRealTemplatesUseStillRender() {
        // Loops over messages, a namespace, a macro, trim, tojson, selectattr, replace, loop.last, raise_exception's
        // guard, as Llama 3, Qwen 2.5, Mistral and Gemma templates use them.
        String template = """
                {%- macro turn(role, text) -%}<|{{ role }}|>{{ text | trim }}</|{{ role }}|>{%- endmacro -%}
                {%- set ns = namespace(users=0) -%}
                {{- bos_token -}}
                {%- set users = messages | selectattr('role', 'equalto', 'user') | list -%}
                {%- for message in messages -%}
                  {%- if message['role'] not in ['system', 'user', 'assistant'] -%}
                    {{- raise_exception('Unknown role: ' + message['role']) -}}
                  {%- endif -%}
                  {%- if message.role == 'user' -%}{%- set ns.users = ns.users + 1 -%}{%- endif -%}
                  {{- turn(message.role, message.content.replace('/think', '')) -}}
                  {%- if loop.last and add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}
                {%- endfor -%}
                {{- {'users': ns.users, 'listed': users | length} | tojson -}}""";
        ChatTemplate t = new ChatTemplate(template, "<s>", "</s>");
        String rendered = t.render(List.of(new ChatMessage("system", " Be brief. "), new ChatMessage("user", "Hi /think"),
                new ChatMessage("assistant", "Hello."), new ChatMessage("user", "Bye")), true);
        assertEquals("<s><|system|>Be brief.</|system|><|user|>Hi</|user|><|assistant|>Hello.</|assistant|><|user|>Bye</|user|>"
                + "<|assistant|>{\"users\":2,\"listed\":2}", rendered);
    }
}
