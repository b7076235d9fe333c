"""Flag submissions for a human to look at: code that could game the tests.

Student code runs in the same kernel as the tests, so it can replace comparison functions
(``np.allclose = lambda *a: True``), read the expected values (fixture files, or the notebook
itself, which holds the hidden tests at grading time), reach the network or start processes.
It can also build code at run time (``exec`` of a decoded string), change how later cells compile
(the shell's input and AST transformers, its exception and display hooks) or write the grader's
records. None of it earns points (the judge compares with values the kernel never had, on records
the grader takes from each test cell itself); this scan makes sure a TA sees the attempt.
It reads the code (it never runs it) and errs towards flagging: a flag is a question, not a
verdict.
"""
from __future__ import annotations

import ast
import functools

from nbformat import NotebookNode

from staff.course_dir import nbgrader

#: Modules whose attributes students must not reassign (comparison and test helpers live there).
GUARDED_MODULES = {"np", "numpy", "torch", "math", "builtins", "__builtins__", "course", "checks", "figures",
                   "testing", "unittest", "pytest", "nbgrader"}
#: Names of comparison functions whose redefinition is suspicious wherever it happens.
COMPARISONS = {"allclose", "isclose", "array_equal", "array_equiv", "assert_allclose", "assert_equal",
               "assert_array_equal", "assert_array_almost_equal", "assert_close", "equal",
               "check_close", "check_equal", "check_shape", "check_rows_sum_to_one", "check_type", "check_heatmap"}
NETWORK_MODULES = {"socket", "urllib", "urllib3", "requests", "http", "httpx", "ftplib", "aiohttp",
                   "smtplib", "paramiko", "websocket"}
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty", "pexpect"}
PROCESS_CALLS = {"system", "popen", "spawnl", "spawnv", "spawnvp", "execv", "execvp", "fork", "forkpty",
                 "startfile", "posix_spawn", "getoutput", "getstatusoutput"}
#: Strings that point at where expected values live.
SECRET_PATHS = ("fixtures", "hidden", ".ipynb", "gradebook", "autograded", "submitted", "source/",
                ".safetensors", "COURSE_FIXTURES")
SECRET_CALLS = {"fixtures_dir", "visibility_dir", "fixture_file", "load_fixture", "load_cases", "load_file"}
#: The shell's hooks: changing them changes how later cells (the tests among them) compile and run.
SHELL_HOOKS = {"input_transformers_cleanup", "input_transformers_post", "ast_transformers", "input_transformer_manager",
               "set_custom_exc", "custom_exceptions", "CustomTB", "showtraceback", "_showtraceback", "showsyntaxerror",
               "run_cell", "run_cell_async", "run_ast_nodes", "run_code", "transform_cell", "transform_ast",
               "displayhook", "excepthook", "display_formatter", "display_pub", "do_execute", "execute_request",
               "pre_run_cell", "post_run_cell", "pre_execute", "post_execute"}
#: Where the grader's records are written (only the checks of a test cell should ever touch them).
RECORD_NAMES = ("course.record", "COURSE_RECORDS", "RECORDS_VARIABLE", "_course_guard")


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


class _Scanner(ast.NodeVisitor):
    def __init__(self, protected: frozenset[str] = frozenset()) -> None:
        self.found: list[str] = []
        self.protected = COMPARISONS | protected

    def flag(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{what} (line {getattr(node, 'lineno', '?')})")

    def _target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Attribute) and (_root(target) in GUARDED_MODULES or target.attr in COMPARISONS):
            self.flag(node, f"replaces {_dotted(target)}")
        elif isinstance(target, ast.Name) and target.id in self.protected:
            self.flag(node, f"redefines {target.id}")
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element, node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target, node)
        self.generic_visit(node)

    visit_AugAssign = visit_AnnAssign = lambda self, node: (self._target(node.target, node), self.generic_visit(node))

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._target(target, node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in self.protected:
            self.flag(node, f"redefines {node.name}")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def _import(self, node: ast.AST, module: str) -> None:
        top = module.split(".")[0]
        if top in NETWORK_MODULES:
            self.flag(node, f"imports {module} (network)")
        elif top in PROCESS_MODULES:
            self.flag(node, f"imports {module} (processes)")
        elif module.startswith(("course.fixtures", "course.paths", "safetensors")):
            self.flag(node, f"imports {module} (fixture files)")
        elif module.startswith(("course.record", "_course_guard")):
            self.flag(node, f"imports {module} (the grader's records)")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self._import(node, node.module or "")
        if (node.module or "") == "course" and any(alias.name == "record" for alias in node.names):
            self.flag(node, "imports course.record (the grader's records)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in SHELL_HOOKS and isinstance(node.ctx, ast.Load) or \
                isinstance(node.ctx, (ast.Store, ast.Del)) and node.attr in SHELL_HOOKS:
            self.flag(node, f"uses {_dotted(node) or node.attr} (changes how the shell runs later cells)")
        elif _dotted(node).endswith("record.write") or node.attr == "RECORDS_VARIABLE":
            self.flag(node, f"uses {_dotted(node)} (the grader's records)")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and any(name in node.value for name in RECORD_NAMES):
            self.flag(node, "names the grader's records in a string")

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        if last in ("setattr", "delattr") and node.args and _root(node.args[0]) in GUARDED_MODULES:
            self.flag(node, f"{last} on {_dotted(node.args[0])}")
        elif last in PROCESS_CALLS and (name.startswith(("os.", "commands.")) or name == last):
            self.flag(node, f"calls {name} (processes)")
        elif name in ("get_ipython().system", "get_ipython().getoutput") or last in ("system", "getoutput") \
                and "get_ipython" in ast.dump(node.func):
            self.flag(node, "runs a shell command")
        elif last in SECRET_CALLS:
            self.flag(node, f"calls {last} (fixture files)")
        elif last in ("open", "read_text", "read_bytes", "load", "loadtxt", "listdir", "glob", "walk",
                      "scandir", "Path", "read"):
            text = ast.dump(node)
            hit = next((s for s in SECRET_PATHS if s in text), None)
            if hit or "__file__" in text or "__session__" in text or "environ" in text:
                self.flag(node, f"{name}(...) on {hit or 'a path from the environment'} (fixtures or notebook)")
        elif last == "patch" or name.startswith(("mock.", "unittest.mock")):
            self.flag(node, f"calls {name} (patching)")
        elif name in ("exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile",
                      "__import__", "importlib.import_module") and node.args \
                and not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            self.flag(node, f"calls {name} on code or a name built at run time")
        elif last in ("register", "unregister") and "events" in name:
            self.flag(node, f"calls {name} (runs code around every later cell)")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if _dotted(node.value) in ("os.environ", "environ") and "COURSE_FIXTURES" in ast.dump(node.slice):
            self.flag(node, "reads COURSE_FIXTURES (fixture files)")
        self.generic_visit(node)


@functools.lru_cache(maxsize=1)
def _transformer():
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager()


def _python(source: str) -> str:
    """IPython syntax (``!cmd``, ``%magic``) as the Python the kernel really runs."""
    return _transformer().transform_cell(source)


@functools.lru_cache(maxsize=4096)
def _parse(source: str) -> ast.Module | None:
    """The cell's syntax tree (read, never changed: the scanners only visit it). Cached: most cells
    of a batch are the same in every submission (given code, read-only cells, answers left as they
    were released), and IPython's transformation is most of the scan's cost."""
    try:
        return ast.parse(_python(source))
    except SyntaxError:
        return None  # it will fail to run; nothing to game


def scan_source(source: str, protected: frozenset[str] = frozenset()) -> list[str]:
    tree = _parse(source)
    if tree is None:
        return []
    scanner = _Scanner(protected)
    scanner.visit(tree)
    return scanner.found


def given_helpers(nb: NotebookNode) -> frozenset[str]:
    """Functions and classes the notebook's read-only cells define, and what they import from
    the course package: the tests rely on them, so an answer cell must not redefine them."""
    names = set()
    for cell in nb.cells:
        if cell.cell_type != "code" or not nbgrader(cell).get("locked"):
            continue
        tree = _parse(cell.source)
        for node in tree.body if tree else []:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course"):
                names.update(alias.asname or alias.name for alias in node.names)
    return frozenset(names)


def scan(nb: NotebookNode) -> list[str]:
    """Reasons to look at a submission, one per finding, naming the cell."""
    protected = given_helpers(nb)
    found = []
    for index, cell in enumerate(nb.cells):
        meta = nbgrader(cell)
        if cell.cell_type != "code" or meta.get("locked"):  # nbgrader overwrites locked cells
            continue
        name = meta.get("grade_id") or f"cell {index + 1}"
        found += [f"{name}: {reason}" for reason in scan_source(cell.source, protected)]
    return found
