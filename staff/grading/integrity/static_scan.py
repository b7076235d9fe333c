"""Flag submissions for a human to look at: code that could game the tests, or that hands an
exercise to a library.

Student code runs in the same kernel as the tests, so it can replace comparison functions
(``np.allclose = lambda *a: True``), read the expected values (fixture files, or the notebook
itself, which holds the hidden tests at grading time), reach the network or start processes,
look into the test's frames or the kernel's objects for what the grader brought, build code at
run time (``exec`` of a decoded string, ``importlib.import_module("sub" + "process")``), change how
later cells compile (the shell's input and AST transformers, its exception and display hooks) or
write the grader's records. None of that earns points (the judge compares with values the kernel
never had, on records the grader takes from each test cell itself); this scan makes sure a TA
sees the attempt. It also names every call of a library implementation the exercise lists as
its answer (:mod:`library_use`): a from-scratch exercise answered by ``torch.softmax`` runs and
may pass, and only a person can decide what it is worth.

It reads the code (it never runs it), IPython's syntax as the Python the kernel really runs
(``!cmd``, ``%sx``, ``%%bash``), and errs towards flagging: a flag is a question, not a verdict.
Which cells are the student's comes from the released notebook, never from the submission's own
metadata (a ``"locked": true`` a student adds changes nothing for nbgrader, so it changes
nothing here either).
"""

from __future__ import annotations

import ast

from nbformat import NotebookNode

from course import checks
from staff.course_dir import nbgrader
from staff.grading.integrity import library_use
from staff.grading.integrity.source_ast import Unreadable, Walker, magic_call, named, parse, strings
from staff.grading.integrity.source_ast import dotted as _dotted
from staff.grading.integrity.source_ast import root as _root

#: Modules whose attributes students must not reassign (comparison and test helpers live there).
GUARDED_MODULES = {
    "np",
    "numpy",
    "torch",
    "math",
    "builtins",
    "__builtins__",
    "course",
    "checks",
    "figures",
    "testing",
    "unittest",
    "pytest",
    "nbgrader",
}
#: Names of comparison functions whose redefinition is suspicious wherever it happens.
#: Comparison functions of NumPy, PyTorch and unittest an answer must not redefine.
LIBRARY_COMPARISONS = frozenset(
    {
        "allclose",
        "isclose",
        "array_equal",
        "array_equiv",
        "assert_allclose",
        "assert_equal",
        "assert_array_equal",
        "assert_array_almost_equal",
        "assert_close",
        "equal",
    }
)


def comparisons() -> frozenset[str]:
    """Names an answer must not redefine: the libraries' comparisons and every check of the course
    (each kind's in :data:`course.checks.KINDS`, the type check, and assignment 3's heatmap check,
    which records through ``check_close``)."""
    recording = {f.__name__ for kind in checks.KINDS.values() for f in kind.checks}
    return LIBRARY_COMPARISONS | recording | {"check_type", "check_heatmap"}


NETWORK_MODULES = {
    "socket",
    "urllib",
    "urllib3",
    "requests",
    "http",
    "httpx",
    "ftplib",
    "aiohttp",
    "smtplib",
    "paramiko",
    "websocket",
    "websockets",
}
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty", "pexpect", "sh", "plumbum", "concurrent"}
NATIVE_MODULES = {"ctypes", "_ctypes", "cffi"}
PROCESS_CALLS = {
    "system",
    "popen",
    "fork",
    "forkpty",
    "startfile",
    "posix_spawn",
    "posix_spawnp",
    "getoutput",
    "getstatusoutput",
    "create_subprocess_exec",
    "create_subprocess_shell",
    "subprocess_exec",
    "subprocess_shell",
}
#: Magics that are only timing or plotting; every other one runs a shell, a file or another
#: language, or changes the shell's configuration or environment.
HARMLESS_MAGICS = {"time", "timeit", "matplotlib", "capture"}
#: Reaching into the test's frames or every object in the kernel (where a hidden test's reference
#: implementation or inputs live while the student's function runs).
INTROSPECTION_CALLS = {
    "sys._getframe",
    "_getframe",
    "inspect.currentframe",
    "inspect.stack",
    "inspect.getouterframes",
    "inspect.getinnerframes",
    "inspect.trace",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
    "globals",
    "vars",
    "traceback.extract_stack",
    "traceback.walk_stack",
}
INTROSPECTION_ATTRIBUTES = {
    "f_back",
    "f_locals",
    "f_globals",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "__globals__",
    "__closure__",
    "__code__",
    "__subclasses__",
    "__builtins__",
}
#: Strings that point at where expected values live.
SECRET_PATHS = (
    "fixtures",
    "hidden",
    ".ipynb",
    "gradebook",
    "autograded",
    "submitted",
    "source/",
    ".safetensors",
    "COURSE_FIXTURES",
)
SECRET_CALLS = {"fixtures_dir", "visibility_dir", "fixture_file", "load_fixture", "load_cases", "load_file"}
#: The shell's hooks: changing them changes how later cells (the tests among them) compile and run.
SHELL_HOOKS = {
    "input_transformers_cleanup",
    "input_transformers_post",
    "ast_transformers",
    "input_transformer_manager",
    "set_custom_exc",
    "custom_exceptions",
    "CustomTB",
    "showtraceback",
    "_showtraceback",
    "showsyntaxerror",
    "run_cell",
    "run_cell_async",
    "run_ast_nodes",
    "run_code",
    "transform_cell",
    "transform_ast",
    "displayhook",
    "excepthook",
    "display_formatter",
    "display_pub",
    "do_execute",
    "execute_request",
    "pre_run_cell",
    "post_run_cell",
    "pre_execute",
    "post_execute",
}
#: Where the grader's records are written (only the checks of a test cell should ever touch them).
RECORD_NAMES = ("course.record", "COURSE_RECORDS", "RECORDS_VARIABLE", "_course_guard")


#: Attributes that are what an object computes: assigning one swaps in another object's work.
REPLACED_BEHAVIOUR = {"forward", "__call__", "_call_impl", "__class__"}
#: Ways to reach an attribute, a module or a value by a name built at run time: what they reach
#: cannot be read from the code, so any use in a student's cell is flagged (a name built at run time
#: is itself a reason to look).
DYNAMIC_ACCESS = {"getattr", "setattr", "delattr", "hasattr"}
DYNAMIC_CALLS = {
    "vars",
    "globals",
    "locals",
    "__import__",
    "operator.attrgetter",
    "operator.methodcaller",
    "attrgetter",
    "methodcaller",
    "importlib.import_module",
    "import_module",
    "importlib.__import__",
}
DYNAMIC_ATTRIBUTES = {"__dict__", "__getattribute__", "__getattr__", "__setattr__", "__delattr__"}
#: Modules that reach objects by name: the kernel's modules, frames, every object.
DYNAMIC_MODULES = {"importlib", "inspect", "gc", "__main__", "builtins"}


def _builtin(node: ast.Call, names: set[str]) -> str | None:
    """The builtin of ``names`` a call calls (``eval(...)``, ``builtins.eval(...)``; ``model.eval()`` is not)."""
    name = named(node.func)
    bare = name.removeprefix("builtins.").removeprefix("__builtins__.")
    return (
        bare
        if bare in names and (name == bare or name.split(".")[0] in ("builtins", "__builtins__"))
        else None
    )


def module_names(tree: ast.AST) -> dict[str, str]:
    """What each name an import binds stands for (``from course import parts as p``: ``p`` ->
    ``course.parts``), so that a module reached under another name is still the module."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update({a.asname: a.name for a in node.names if a.asname})
        elif isinstance(node, ast.ImportFrom) and node.module:
            bound.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    return bound


class _Scanner(Walker):
    def __init__(
        self, protected: frozenset[str] = frozenset(), modules: dict[str, str] | None = None
    ) -> None:
        self.found: list[str] = []
        #: names bound to modules (or their objects) by imports in the notebook: :func:`module_names`
        self.modules = modules or {}
        self.comparisons = comparisons()
        self.protected = self.comparisons | protected
        #: names a loop binds to each of a few written strings (``for name in ("q_lin", "k_lin")``):
        #: what they name can be read, like a constant
        self.spelled: dict[str, tuple[str, ...]] = {}

    def _names(self, node: ast.AST | None) -> tuple[str, ...] | None:
        """The strings ``node`` can be, if the code spells them all out; None otherwise."""
        if _constant(node) is not None:
            return (_constant(node),)
        return self.spelled.get(node.id) if isinstance(node, ast.Name) else None

    def visit_For(self, node: ast.For | ast.comprehension) -> None:
        spelled = node.iter.elts if isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)) else None
        if isinstance(node.target, ast.Name):
            if spelled and all(_constant(e) is not None for e in spelled):
                self.spelled[node.target.id] = tuple(e.value for e in spelled)
            else:
                self.spelled.pop(node.target.id, None)

    visit_AsyncFor = visit_comprehension = visit_For

    def flag(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{what} (line {getattr(node, 'lineno', '?')})")

    def _guarded(self, node: ast.AST | None) -> bool:
        """``node`` is reached from a guarded module, under its own name or one an import gave it."""
        root = _root(node)
        return root in GUARDED_MODULES or self.modules.get(root, "").split(".")[0] in GUARDED_MODULES

    def _full(self, node: ast.AST | None) -> str:
        """``p.references``, and what it names (``course.parts.references``) when an import bound ``p``."""
        dotted, root = _dotted(node) or "...", _root(node)
        full = self.modules[root] + dotted[len(root) :] if root in self.modules else dotted
        return dotted if full == dotted else f"{dotted} (that is, {full})"

    def _target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Attribute) and (self._guarded(target) or target.attr in self.comparisons):
            self.flag(node, f"replaces {self._full(target)}")
        elif isinstance(target, ast.Attribute) and target.attr in REPLACED_BEHAVIOUR:
            # a model whose forward is another object's answers with that object's work
            self.flag(node, f"replaces {_dotted(target) or target.attr} (what the object computes)")
        elif isinstance(target, ast.Name) and target.id in self.protected:
            self.flag(node, f"redefines {target.id}")
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element, node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target, node)
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    self.spelled.pop(name.id, None)

    def visit_AugAssign(self, node: ast.AugAssign | ast.AnnAssign) -> None:
        self._target(node.target, node)
        if isinstance(node.target, ast.Name):
            self.spelled.pop(node.target.id, None)

    visit_AnnAssign = visit_AugAssign

    def visit_Delete(self, node: ast.Delete) -> bool:
        for target in node.targets:
            self._target(target, node)
        return False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in self.protected:
            self.flag(node, f"redefines {node.name}")

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def _import(self, node: ast.AST, module: str, via: str = "") -> bool:
        top = module.split(".")[0]
        what = (
            "network"
            if top in NETWORK_MODULES
            else "processes"
            if top in PROCESS_MODULES or module == "asyncio.subprocess"
            else "native code"
            if top in NATIVE_MODULES
            else "fixture files"
            if module.startswith(("course.fixtures", "course.paths", "safetensors"))
            else "the grader's records"
            if module.startswith(("course.record", "_course_guard"))
            else "reaches modules, frames or objects by names built at run time"
            if top in DYNAMIC_MODULES
            else None
        )
        if what:
            self.flag(node, f"imports {module}{via} ({what})")
        return what is not None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if self._import(node, module):
            return
        for alias in node.names:
            full = f"{module}.{alias.name}"
            if self._import(node, full):
                continue
            if full in INTROSPECTION_CALLS or full == "sys.modules" or full in DYNAMIC_CALLS:
                self.flag(
                    node, f"imports {full} (the test's frames, the kernel's objects or imports by name)"
                )

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "get_ipython":
            self.flag(node, "uses the IPython shell itself (get_ipython)")
        elif node.id in ("__builtins__", "__main__"):
            self.flag(node, f"uses {node.id} (reaches names built at run time)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = _dotted(node) or node.attr
        if node.attr in SHELL_HOOKS:
            self.flag(node, f"uses {name} (changes how the shell runs later cells)")
        elif name.endswith("record.write") or node.attr == "RECORDS_VARIABLE":
            self.flag(node, f"uses {name} (the grader's records)")
        elif node.attr in INTROSPECTION_ATTRIBUTES:
            self.flag(node, f"uses {name} (the test's frames or other functions' globals)")
        elif node.attr in DYNAMIC_ATTRIBUTES:
            self.flag(node, f"uses {name} (attributes by names built at run time)")
        elif name in ("sys.modules", "modules") and _root(node) == "sys":
            self.flag(node, "looks up sys.modules (imports by name)")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and any(name in node.value for name in RECORD_NAMES):
            self.flag(node, "names the grader's records in a string")

    def _magic(self, node: ast.Call) -> bool:
        """``%magic`` / ``%%magic`` / ``!cmd`` as IPython transforms them; True when handled. The
        body of a magic that runs Python is in the tree right after the call (:mod:`source_ast`)."""
        call = magic_call(node)
        if call is None:
            return False
        kind, magic = call
        if kind in ("system", "getoutput"):
            self.flag(node, "runs a shell command (!)")
        elif kind in ("run_line_magic", "run_cell_magic"):
            percent = "%%" if kind == "run_cell_magic" else "%"
            if magic not in HARMLESS_MAGICS:
                self.flag(
                    node, f"runs the {percent}{magic or '?'} magic (a shell, a file, or the shell's settings)"
                )
            elif any(_constant(a) is None for a in node.args[1:]):
                self.flag(node, f"runs the {percent}{magic} magic on code built at run time")
        else:
            self.flag(node, f"calls get_ipython().{kind} (the shell itself)")
        return True

    def visit_Call(self, node: ast.Call) -> bool | None:
        if self._magic(node):
            return False
        name = _dotted(node.func) if not isinstance(node.func, ast.Call) else ""
        last = name.rsplit(".", 1)[-1]
        first = node.args[0] if node.args else None
        dynamic = _builtin(node, DYNAMIC_ACCESS)
        code = _builtin(node, {"exec", "eval", "compile"})
        if dynamic and len(node.args) > 1:
            attributes = self._names(node.args[1])
            risky = SHELL_HOOKS | INTROSPECTION_ATTRIBUTES | PROCESS_CALLS | DYNAMIC_ATTRIBUTES | {"modules"}
            if attributes is None:
                self.flag(node, f"{dynamic}({_dotted(first) or '...'}, <a name built at run time>)")
            elif risky.intersection(attributes):
                self.flag(node, f"{dynamic}(..., {sorted(risky.intersection(attributes))[0]!r})")
            elif dynamic in ("setattr", "delattr") and self._guarded(first):
                self.flag(node, f"{dynamic} on {self._full(first)}")
        elif code:
            if _constant(first) is None:  # a constant's code is read as the cell's own (source_ast)
                self.flag(node, f"calls {code} on code built at run time")
        elif named(node.func) in DYNAMIC_CALLS or _builtin(node, DYNAMIC_CALLS):
            if _constant(first) is not None and last in ("import_module", "__import__"):
                if not self._import(node, _constant(first), via=f" through {name}()"):
                    self.flag(node, f"calls {name}() (imports by name)")
            else:
                self.flag(node, f"calls {name}() (reaches names built at run time)")
        elif (
            last in PROCESS_CALLS
            and (
                name.startswith(("os.", "commands.", "asyncio.", "loop.")) or name == named(node.func) == last
            )
            or (name.startswith("os.") and last.startswith(("exec", "spawn")))
        ):
            self.flag(node, f"calls {name} (processes)")
        elif name in INTROSPECTION_CALLS or last == "_getframe":
            self.flag(node, f"calls {name}() (the test's frames or the kernel's objects)")
        elif last in SECRET_CALLS:
            self.flag(node, f"calls {last} (fixture files)")
        elif last in (
            "open",
            "read_text",
            "read_bytes",
            "load",
            "loadtxt",
            "listdir",
            "glob",
            "walk",
            "scandir",
            "Path",
            "read",
        ):
            text = strings(node)
            hit = next((s for s in SECRET_PATHS if s in text), None)
            if hit or "__file__" in text or "__session__" in text or "environ" in text:
                self.flag(
                    node, f"{name}(...) on {hit or 'a path from the environment'} (fixtures or notebook)"
                )
        elif last == "patch" or name.startswith(("mock.", "unittest.mock")):
            self.flag(node, f"calls {name} (patching)")
        elif last in ("register", "unregister") and "events" in name:
            self.flag(node, f"calls {name} (runs code around every later cell)")
        return None

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if _dotted(node.value) in ("os.environ", "environ") and "COURSE_FIXTURES" in strings(node.slice):
            self.flag(node, "reads COURSE_FIXTURES (fixture files)")


def _constant(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def scan_source(
    source: str, protected: frozenset[str] = frozenset(), modules: dict[str, str] | None = None
) -> list[str]:
    """Reasons to look at one cell's code; ``modules``: what the notebook's imports bind (its own
    imports are added)."""
    try:
        tree = parse(source)
    except Unreadable as error:
        return [f"cannot be read whole: {error} (line 1)"]
    if tree is None:
        return []
    scanner = _Scanner(protected, {**(modules or {}), **module_names(tree)})
    scanner.walk(tree)
    return scanner.found


def read_only_ids(released: NotebookNode) -> frozenset[str]:
    """Grade ids of the released notebook's read-only cells: nbgrader puts back their source from
    the gradebook before the run, whatever the submission holds there, so they are the course's."""
    return frozenset(
        nbgrader(c)["grade_id"]
        for c in released.cells
        if nbgrader(c).get("locked") and not nbgrader(c).get("solution") and nbgrader(c).get("grade_id")
    )


def given_helpers(released: NotebookNode) -> frozenset[str]:
    """Functions and classes the released notebook's read-only cells define, and what they import
    from the course package: the tests rely on them, so an answer cell must not redefine them."""
    names = set()
    ids = read_only_ids(released)
    for cell in released.cells:
        if cell.cell_type != "code" or nbgrader(cell).get("grade_id") not in ids:
            continue
        tree = parse(cell.source)
        for node in tree.body if tree else []:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course"):
                names.update(alias.asname or alias.name for alias in node.names)
    return frozenset(names)


def students_cells(nb: NotebookNode, released: NotebookNode) -> list[tuple[str, NotebookNode]]:
    """``(name, cell)`` of every code cell that runs as the student wrote it: all but those whose
    grade id is a read-only cell of the release (roles from the release, not the submission)."""
    ids = read_only_ids(released)
    return [
        (nbgrader(cell).get("grade_id") or f"cell {index + 1}", cell)
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and nbgrader(cell).get("grade_id") not in ids
    ]


def hidden_names(source: NotebookNode) -> frozenset[str]:
    """Functions and classes the source notebook's hidden tests define (reference implementations
    among them): no student has seen them, so code that calls one found it in the kernel."""
    names = set()
    for cell in source.cells:
        if cell.cell_type == "code" and "### BEGIN HIDDEN TESTS" in cell.source:
            tree = parse(cell.source)
            names.update(
                node.name
                for top in (tree.body if tree else [])
                for node in (top.body if isinstance(top, ast.With) else [top])  # `with references(...)`
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            )
    return frozenset(names)


def _uses_hidden(source: str, hidden: frozenset[str]) -> list[str]:
    try:
        tree = parse(source)
    except Unreadable:  # scan_source flags the cell
        return []
    if tree is None or not hidden:
        return []
    defined = {
        n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    defined |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    used = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in hidden - defined:
            used.setdefault(node.id, node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in hidden:
            used.setdefault(node.value, node.lineno)  # globals()["reference_softmax"]
    return [
        f"uses {name}, which only the hidden tests define (the grader's own reference) (line {line})"
        for name, line in sorted(used.items(), key=lambda item: item[1])
    ]


def scan(nb: NotebookNode, released: NotebookNode, hidden: frozenset[str] = frozenset()) -> list[str]:
    """Reasons to look at a submission, one per finding, naming the cell (and, for a library's
    implementation of an exercise, the exercise). ``hidden``: :func:`hidden_names` of the source."""
    protected = given_helpers(released)
    cells = students_cells(nb, released)
    modules: dict[str, str] = {}  # a module imported in one cell and changed in another
    for cell in [*released.cells, *(cell for _, cell in cells)]:
        try:
            tree = parse(cell.source) if cell.cell_type == "code" else None
        except Unreadable:
            tree = None
        modules.update(module_names(tree) if tree else {})
    found = [
        f"{name}: {reason}"
        for name, cell in cells
        for reason in scan_source(cell.source, protected, modules) + _uses_hidden(cell.source, hidden)
    ]
    return found + library_use.scan(cells, nb, released)
