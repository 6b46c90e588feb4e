"""The lazy ``@dataclass`` (pytest_elizon_eval/records.py): a class is made on first use
and then behaves as the standard decorator's, from any thread, through pickle."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from pytest_elizon_eval import records
from pytest_elizon_eval.records import dataclass


def test_a_class_is_made_on_its_first_instance_and_then_is_a_dataclass() -> None:
    @dataclass(frozen=True)
    class Base:
        name: str
        tags: tuple[str, ...] = ()

    @dataclass(frozen=True)
    class Child(Base):
        size: int = dataclasses.field(default=1)

    assert Base in records._pending
    assert Child in records._pending
    assert "__init__" not in Base.__dict__  # nothing generated yet
    child = Child("a", ("x",), 3)  # makes the base first, then the child
    assert Base not in records._pending
    assert Child not in records._pending
    assert child == Child("a", ("x",), 3)
    assert hash(child) == hash(Child("a", ("x",), 3))
    assert repr(child).endswith("Child(name='a', tags=('x',), size=3)")
    assert Base("b") == Base("b", ())
    assert Base("b") != Base("c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        child.name = "z"  # type: ignore[misc]
    assert dataclasses.replace(child, size=4).size == 4
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        Base()  # type: ignore[call-arg]
    assert [f.name for f in dataclasses.fields(Child)] == ["name", "tags", "size"]


def test_fields_makes_a_class_nobody_instantiated_yet_and_is_record_tells_it() -> None:
    @dataclass
    class Lonely:
        count: int = 0
        seen: list[int] = dataclasses.field(default_factory=list)

    assert records.is_record(Lonely)
    assert Lonely in records._pending  # telling is not making
    assert not records.is_record(int)
    assert [f.name for f in records.fields(Lonely)] == ["count", "seen"]
    assert Lonely not in records._pending
    assert Lonely().seen is not Lonely().seen  # the factory, not a shared default


def test_first_instances_from_many_threads_at_once_make_the_class_once() -> None:
    @dataclass(frozen=True)
    class Shared:
        value: int

    made: list[Shared] = []
    start = threading.Barrier(8)

    def worker(i: int) -> None:
        start.wait()
        made.append(Shared(i))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(item.value for item in made) == list(range(8))
    assert Shared not in records._pending


def test_pickle_rebuilds_an_instance_in_a_process_where_the_class_is_not_made(
        tmp_path: Path) -> None:
    (tmp_path / "shapes.py").write_text(textwrap.dedent("""
        from pytest_elizon_eval.records import dataclass

        @dataclass(frozen=True)
        class Point:
            x: int
            y: int = 0
    """))
    pickled = tmp_path / "point.pickle"
    dump = ("import pickle, sys, shapes; "
            f"open({str(pickled)!r}, 'wb').write(pickle.dumps(shapes.Point(3, 4)))")
    load = ("import pickle, shapes; from pytest_elizon_eval import records; "
            "assert shapes.Point in records._pending; "
            f"p = pickle.loads(open({str(pickled)!r}, 'rb').read()); "
            "print(p, p == shapes.Point(3, 4))")
    for code in (dump, load):
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Point(x=3, y=4) True"


def test_a_class_with_its_own_new_or_slots_is_made_at_once() -> None:
    @dataclass(frozen=True, slots=True)
    class Slotted:
        x: int

    @dataclass
    class Numbered(int):
        label: str = ""

    assert Slotted not in records._pending
    assert "__slots__" in Slotted.__dict__
    assert Numbered not in records._pending


def test_a_class_whose_module_left_sys_modules_is_still_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pytester's in-process runs drop the modules first imported inside them; a class of
    # such a module made afterwards needs its module for its string annotations
    (tmp_path / "dropped_shapes.py").write_text(textwrap.dedent("""
        from __future__ import annotations
        from pytest_elizon_eval.records import dataclass

        @dataclass(frozen=True)
        class Box:
            size: int
            label: str = "box"
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import dropped_shapes  # type: ignore[import-not-found]

    del sys.modules["dropped_shapes"]
    assert dropped_shapes.Box(2) == dropped_shapes.Box(2, "box")
    assert "dropped_shapes" not in sys.modules  # put back only while the class was made


# -- the compiled methods kept between sessions ------------------------------------------------

def _make_point(methods: records._CompiledMethods, monkeypatch: pytest.MonkeyPatch) -> type:
    monkeypatch.setattr(records, "_compiled", methods)
    monkeypatch.setattr(records.atexit, "register", lambda save: save)  # saved by the test

    @dataclass(frozen=True)
    class Point:
        x: int
        y: int = 2

    assert Point(1) == Point(1, 2)
    assert repr(Point(1)).endswith(".Point(x=1, y=2)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        Point(1).x = 3  # type: ignore[misc]
    return Point


def test_methods_compiled_once_are_read_back_by_the_next_session_and_behave_alike(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "__pycache__" / "records.test.methods"
    first = records._CompiledMethods(path)
    _make_point(first, monkeypatch)
    assert first.added
    assert first.codes
    first.save()
    assert path.exists()
    assert not first.added
    assert "exec" not in dataclasses.__dict__  # the stand-in is gone after the class is made

    assert path.read_bytes().startswith(importlib.util.MAGIC_NUMBER)  # as a .pyc is stamped
    later = records._CompiledMethods(path)  # the next session: nothing is compiled again
    monkeypatch.setattr(records, "compile", lambda *a, **k: pytest.fail("compiled again"),
                        raising=False)
    _make_point(later, monkeypatch)
    assert not later.added
    assert later.used == set(first.codes)

    namespace: dict[str, object] = {}
    later.exec("made_elsewhere = 1", None, namespace)  # another thread's class: not kept
    assert namespace == {"made_elsewhere": 1}
    assert "made_elsewhere = 1" not in (later.codes or {})

    path.write_bytes(b"\x00\x00\r\n" + path.read_bytes()[4:])  # another interpreter's
    assert records._CompiledMethods(path)._load() == {}


def test_an_unreadable_or_unwritable_methods_file_only_costs_compiling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    garbage = tmp_path / "garbage.methods"
    garbage.write_bytes(b"\x00not marshal data")
    methods = records._CompiledMethods(garbage)
    _make_point(methods, monkeypatch)
    assert methods.added

    blocked = tmp_path / "file"  # its "folder" is a file: the write fails quietly
    blocked.write_text("")
    methods = records._CompiledMethods(blocked / "records.methods")
    _make_point(methods, monkeypatch)
    methods.save()
    assert methods.path is None
    assert not list(tmp_path.glob("**/*.tmp"))

    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # PYTHONDONTWRITEBYTECODE
    quiet = records._CompiledMethods(tmp_path / "quiet.methods")
    _make_point(quiet, monkeypatch)
    quiet.save()
    assert not (tmp_path / "quiet.methods").exists()


def test_past_its_size_the_methods_file_keeps_only_what_this_process_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "records.methods"
    methods = records._CompiledMethods(path)
    methods.codes = {f"stale_{n} = {n}": compile("pass", "<string>", "exec") for n in range(3)}
    monkeypatch.setattr(records._CompiledMethods, "MOST", 3)
    _make_point(methods, monkeypatch)
    methods.save()
    kept = records._CompiledMethods(path)._load()
    assert kept
    assert set(kept) == methods.used  # the three stale sources are gone
