#!/usr/bin/env python3
"""Hold N idle or trickling connections from one address and probe a health path from another.

usage: scripts/slowloris_probe.py PORT PATH MODE(idle|trickle) N SECONDS
e.g.   scripts/slowloris_probe.py 8000 /health trickle 1100 130     (graphlane serve)
       scripts/slowloris_probe.py 8558 /alive idle 1100 75          (a node's management port)

Against a server on 127.0.0.1 (Linux: every 127.x address is loopback). The crowd connects from 127.0.0.2,
at most 50 connects in flight until all N are open, and reconnects 1 s after the server closes a connection;
idle members send nothing, trickling ones send "GET / HTTP/1.1" and then one header line every 10 s. Once the
crowd is open (or after 30 s), the probe sends GET PATH from 127.0.0.1 once a second on a fresh connection
(5 s timeout) for SECONDS. Prints one JSON line: probes answered 200 and failed, p50/p90/max latency in ms,
when the failures were, and how many crowd connections were opened and cut. Needs Python 3.8+ only.
"""
import asyncio
import json
import sys
import time

HOST = "127.0.0.1"
CROWD = "127.0.0.2"


async def crowd_member(port, mode, stats, stop, gate, connected):
    first = True
    while not stop.is_set():
        try:
            if first:
                async with gate:  # ramp: at most 50 connects in flight, so each is accepted by the kernel
                    reader, writer = await asyncio.open_connection(HOST, port, local_addr=(CROWD, 0))
            else:
                reader, writer = await asyncio.open_connection(HOST, port, local_addr=(CROWD, 0))
            if first:
                connected.append(1)
                first = False
        except OSError:
            stats["connect_failed"] += 1
            await asyncio.sleep(1)
            continue
        stats["opened"] += 1
        try:
            if mode == "trickle":
                writer.write(b"GET / HTTP/1.1\r\n")
                await writer.drain()
                i = 0
                while not stop.is_set():
                    try:
                        data = await asyncio.wait_for(reader.read(1024), timeout=10)
                        if not data:
                            break  # closed by the server
                    except asyncio.TimeoutError:
                        pass
                    writer.write(b"X-Line-%d: slow\r\n" % i)
                    await writer.drain()
                    i += 1
            else:
                while not stop.is_set():
                    try:
                        data = await asyncio.wait_for(reader.read(1024), timeout=1)
                        if not data:
                            break
                    except asyncio.TimeoutError:
                        pass
        except (ConnectionError, OSError):
            pass
        if not stop.is_set():
            stats["cut"] += 1
        writer.close()
        if not stop.is_set():
            await asyncio.sleep(1)


async def probe(port, path):
    t0 = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port, local_addr=(HOST, 0)), timeout=5)
        writer.write(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout=5 - (time.monotonic() - t0))
        writer.close()
        ok = line.startswith(b"HTTP/1.1 200")
        return ok, (time.monotonic() - t0) * 1000, line.decode(errors="replace").strip()
    except Exception as e:  # timeout, reset
        return False, (time.monotonic() - t0) * 1000, type(e).__name__


async def main():
    port, path, mode, n, seconds = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    stats = {"opened": 0, "cut": 0, "connect_failed": 0}
    stop = asyncio.Event()
    before = [await probe(port, path) for _ in range(3)]
    gate = asyncio.Semaphore(50)
    connected = []
    crowd = [asyncio.create_task(crowd_member(port, mode, stats, stop, gate, connected)) for _ in range(n)]
    ramp_start = time.monotonic()
    while len(connected) < n and time.monotonic() - ramp_start < 30:
        await asyncio.sleep(0.1)
    ramp = (len(connected), round(time.monotonic() - ramp_start, 1))
    results = []
    first_fail = None
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        t = time.monotonic()
        ok, ms, what = await probe(port, path)
        results.append((t - start, ok, ms, what))
        await asyncio.sleep(max(0, 1 - (time.monotonic() - t)))
    stop.set()
    await asyncio.gather(*crowd, return_exceptions=True)
    lat = sorted(ms for _, ok, ms, _ in results if ok)
    failed = [(round(t, 1), what) for t, ok, _, what in results if not ok]
    pct = lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))], 1) if lat else None
    print(json.dumps({
        "mode": mode, "crowd": n, "seconds": seconds, "path": path,
        "before_ms": [round(ms, 1) for _, ms, _ in before],
        "probes": len(results), "ok": len(lat), "failed": len(failed),
        "p50_ms": pct(0.5), "p90_ms": pct(0.9), "max_ms": round(lat[-1], 1) if lat else None,
        "failed_window_s": [failed[0][0], failed[-1][0]] if failed else None,
        "failure_kinds": sorted({w for _, w in failed}),
        "crowd_connected_before_probing": ramp[0], "ramp_s": ramp[1],
        "crowd_opened": stats["opened"], "crowd_cut": stats["cut"], "crowd_connect_failed": stats["connect_failed"],
    }))


asyncio.run(main())
