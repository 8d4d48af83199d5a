"""The local data path's object store (localcluster/objectstore.py) as configured: the identities SeaweedFS is given
(each team's keys reach its own bucket only) and the server's command line. World: none (no server started; the
live acceptance test runs it)."""

from __future__ import annotations

from pathlib import Path

from localcluster import objectstore as o


def test_each_team_reaches_its_own_bucket_only_read_write_or_read_only_but_scratch() -> None:
    ids = o.identities({"zeta": "local-data-zeta", "eta": "local-data-eta"},
                       {"zeta": o.Keys("Z", "z"), "eta": o.Keys("E", "e")},
                       {"zeta": o.Keys("ZR", "zr"), "eta": o.Keys("ER", "er")}, o.Keys("A", "a"))["identities"]
    assert [(i["name"], i["credentials"][0]["accessKey"], i["actions"]) for i in ids] == [
        ("platform-admin", "A", ["Admin", "Read", "List", "Tagging", "Write"]),
        ("team-zeta", "Z", ["Read:local-data-zeta", "List:local-data-zeta", "Tagging:local-data-zeta",
                            "Write:local-data-zeta"]),
        ("team-zeta-read-only", "ZR", ["Read:local-data-zeta", "List:local-data-zeta", "Write:local-data-zeta/scratch/*"]),
        ("team-eta", "E", ["Read:local-data-eta", "List:local-data-eta", "Tagging:local-data-eta",
                           "Write:local-data-eta"]),
        ("team-eta-read-only", "ER", ["Read:local-data-eta", "List:local-data-eta", "Write:local-data-eta/scratch/*"]),
    ]


def test_the_server_listens_on_the_bridge_address_only_on_four_ports_below_the_ephemeral_range() -> None:
    args = o.server_args(Path("/s/object-store/data"), "10.244.0.1", 18330, Path("/s/object-store/s3.json"))
    assert args[:4] == ["server", "-dir=/s/object-store/data", "-ip=10.244.0.1", "-ip.bind=10.244.0.1"]
    assert {"-master.port=18330", "-volume.port=18331", "-filer.port=18332", "-s3.port=18333",
            "-s3.config=/s/object-store/s3.json", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-master.telemetry=false"} <= set(args)


def test_store_json_round_trips(tmp_path: Path) -> None:
    store = o.Store("http://10.244.0.1:18333", {"zeta": "local-data-zeta"}, {"zeta": o.Keys("Z", "z")},
                    {"zeta": o.Keys("ZR", "zr")}, o.Keys("A", "a"))
    assert o.Store.from_json(store.to_json()) == store
    assert o.load(tmp_path) is None
