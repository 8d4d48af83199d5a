"""ValidatingAdmissionPolicy CEL evaluated, not searched: cel-python (celpy) parses and runs each expression
against sample objects bound as the API server binds them (object, oldObject, request, namespaceObject,
params, authorizer, variables).

cel-python implements standard CEL (macros, string and list functions, conversions). The Kubernetes CEL
libraries (k8s.io/apiserver/pkg/cel/library, and the cel-go `ext` strings library the API server enables)
are not in it. The expressions here use a few of their functions; this module gives them small Python
twins, each following the Kubernetes definition it names, and says so where it defines them:
- quantity(string), isQuantity(string), <Quantity>.asApproximateFloat(), <Quantity>.compareTo(<Quantity>)
  (library.Quantity; resource.Quantity's grammar and suffixes);
- <string>.split(sep), <list>.join(sep), <string>.substring(start[, end]) (cel-go ext.Strings);
- <list>.sum() (library.Lists);
- <string>.find(regex), <string>.findAll(regex[, limit]) (library.Regex; RE2 through google-re2, which
  cel-python itself depends on, so the patterns mean what they mean in the API server);
- authorizer.group(g).resource(r).check(verb).allowed() (library.Authz), answered from a fixed table of
  what the requester may do, the way a test would seed RBAC.
They are a twin, not the real thing: the integration and live layers run the same expressions in a real
kube-apiserver, which stays the authority on those functions.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable

import celpy
import celpy.evaluation
import lark
from celpy import celtypes

# --- Kubernetes library twins --------------------------------------------------------------------------------

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1, "k": 10**3,
            "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
# resource.Quantity's serialization: <signedNumber><suffix>, suffix binarySI | decimalSI | decimalExponent.
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")


class Quantity:
    """library.Quantity: a resource.Quantity, exact (a fraction) as Kubernetes keeps it."""

    def __init__(self, text: str) -> None:
        m = _QUANTITY.match(text)
        if not m:
            raise ValueError(f"quantities must match the regular expression: {text!r}")
        number, suffix = Fraction(m.group(1)), m.group(2) or ""
        if suffix in _BINARY:
            self.value = number * _BINARY[suffix]
        elif suffix in _DECIMAL:
            self.value = number * _DECIMAL[suffix]
        else:
            self.value = number * Fraction(10) ** int(suffix[1:])
        self.text = text

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


def _quantity(text: Any) -> Any:
    if not isinstance(text, str):
        return celpy.CELEvalError("no such overload: quantity", TypeError, (text,))
    try:
        return Quantity(str(text))
    except ValueError as err:
        return celpy.CELEvalError(str(err), ValueError, (text,))


def _is_quantity(text: Any) -> Any:
    return celtypes.BoolType(isinstance(text, str) and bool(_QUANTITY.match(str(text))))


def _as_approximate_float(q: Any) -> Any:
    return celtypes.DoubleType(float(q.value))


def _compare_to(a: Any, b: Any) -> Any:
    return celtypes.IntType((a.value > b.value) - (a.value < b.value))


def _split(s: Any, sep: Any, limit: Any = None) -> Any:
    # ext.Strings split: limit < 0 (or absent) all parts, 0 none, n at most n parts.
    if limit is None or int(limit) < 0:
        parts = str(s).split(str(sep))
    elif int(limit) == 0:
        parts = []
    else:
        parts = str(s).split(str(sep), int(limit) - 1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _join(items: Any, sep: Any = "") -> Any:
    return celtypes.StringType(str(sep).join(str(i) for i in items))


def _substring(s: Any, start: Any, end: Any = None) -> Any:
    text = str(s)
    stop = len(text) if end is None else int(end)
    if not 0 <= int(start) <= stop <= len(text):
        return celpy.CELEvalError(f"index out of range: substring({start}, {end}) of a {len(text)}-char string",
                                  IndexError, (start, end))
    return celtypes.StringType(text[int(start):stop])


@dataclass(frozen=True)
class _AuthzStep:
    """library.Authz, step by step: authorizer.group(g).resource(r)[.namespace(ns)].check(verb).allowed().
    `grants` are (group, resource, verb, namespace) with namespace '' for a cluster-wide grant (a
    ClusterRoleBinding), which also answers every namespaced check; a namespaced grant (a RoleBinding)
    answers only checks in its namespace, as RBAC does."""

    grants: frozenset[tuple[str, str, str, str]]
    group: str | None = None
    resource: str | None = None
    namespace: str = ""
    verb: str | None = None


def _authz_group(a: Any, g: Any) -> Any:
    return _AuthzStep(a.grants, group=str(g))


def _authz_resource(a: Any, r: Any) -> Any:
    return _AuthzStep(a.grants, group=a.group, resource=str(r))


def _authz_namespace(a: Any, ns: Any) -> Any:
    return _AuthzStep(a.grants, group=a.group, resource=a.resource, namespace=str(ns))


def _authz_check(a: Any, verb: Any) -> Any:
    return _AuthzStep(a.grants, group=a.group, resource=a.resource, namespace=a.namespace, verb=str(verb))


def _authz_allowed(a: Any) -> Any:
    scopes = {"", a.namespace}
    return celtypes.BoolType(any((a.group, a.resource, a.verb, ns) in a.grants for ns in scopes))


def _sum(items: Any) -> Any:
    """library.Lists sum(): the sum of a list of numbers, of the elements' type (int or double)."""
    values = list(items)
    if any(isinstance(v, celtypes.DoubleType) for v in values):
        return celtypes.DoubleType(sum(float(v) for v in values))
    return celtypes.IntType(sum(int(v) for v in values))


def _find(s: Any, pattern: Any) -> Any:
    import re2

    m = re2.search(str(pattern), str(s))
    return celtypes.StringType(m.group(0) if m else "")


def _find_all(s: Any, pattern: Any, limit: Any = None) -> Any:
    import re2

    found = [m.group(0) for m in re2.finditer(str(pattern), str(s))]
    if limit is not None and int(limit) >= 0:
        found = found[:int(limit)]
    return celtypes.ListType([celtypes.StringType(f) for f in found])


def _contains(container: Any, item: Any) -> Any:
    # cel-python 0.5.0: `'a' + 'b'` evaluates to a plain Python str, whose .contains() its own `contains`
    # then fails to find (AttributeError, "no such overload"); CEL's string contains, for either.
    if isinstance(container, str):
        return celtypes.BoolType(str(item) in container)
    return celpy.base_functions["contains"](container, item)


# Member functions dispatch by name with the receiver first: these names cover every overload used here.
_K8S_FUNCTIONS = {
    "contains": _contains,
    "quantity": _quantity, "isQuantity": _is_quantity, "asApproximateFloat": _as_approximate_float,
    "compareTo": _compare_to, "split": _split, "join": _join, "substring": _substring,
    "find": _find, "findAll": _find_all, "sum": _sum,
    "group": _authz_group, "resource": _authz_resource, "namespace": _authz_namespace, "check": _authz_check,
    "allowed": _authz_allowed,
}

# --- cel-python, made cheaper to run (the same evaluation) --------------------------------------------------
# The fast suites evaluate several thousand expressions against sample objects; cel-python's tree-walking
# evaluator (cel-python 0.5.0, the pinned version: celpy/evaluation.py Evaluator, a lark 1.3.1
# lark/visitors.py Interpreter) spent most of that time on work that does not change a result
# (tests/unit/support/test_cel_evaluator.py holds this evaluator to cel-python's own, expression by expression):
# - `cast(Tuple[Result, Result], ...)` in its hot paths builds and hashes a typing generic over the big
#   `Result` union at every node. cast() is the identity, so the typing names celpy.evaluation uses only in
#   annotations and cast() get a subscript that costs nothing (Sequence and Mapping, which it also uses in
#   isinstance(), are left alone).
# - the grammar's precedence levels: `a.b` parses as expr > conditionalor > conditionaland > relation >
#   addition > multiplication > unary > member > primary, and each level with a single child only returns that
#   child's value (each such method begins `if len(tree.children) == 1: return self.visit_children(tree)[0]`;
#   `member` always does). _prepare() marks each node with the node whose method gives its value, so
#   _Evaluator visits that one directly; every node it visits runs celpy's own method.
# - node names are lark Tokens, whose `==` (every `child.data == "literal"` test) is a Python method; as
#   plain str they compare the same.
# - a literal's value (a string literal's escapes expanded) is made once per node, not per evaluation; the
#   base activation (annotations, functions) once per program, not per evaluation.


class _ErasedGeneric:
    def __getitem__(self, _item: Any) -> "_ErasedGeneric":
        return self


for _name in ("Tuple", "List", "Iterable", "Union", "Dict", "Callable", "Optional"):
    setattr(celpy.evaluation, _name, _ErasedGeneric())

_SINGLE_CHILD_PASSES = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition",
                                  "multiplication", "unary", "member"})


_NOT_MADE = object()


def _prepare(ast: lark.Tree) -> lark.Tree:
    for node in ast.iter_subtrees():
        node.data = str(node.data)
    for node in ast.iter_subtrees():
        target = node
        while target.data in _SINGLE_CHILD_PASSES and len(target.children) == 1 \
                and isinstance(target.children[0], lark.Tree):
            target = target.children[0]
        node.cel_value_of = target  # type: ignore[attr-defined]
    return ast


class _Evaluator(celpy.evaluation.Evaluator):
    def _visit_tree(self, tree: lark.Tree) -> Any:
        tree = getattr(tree, "cel_value_of", tree)  # a node celpy makes while evaluating is not marked
        return getattr(self, tree.data)(tree)  # lark's Interpreter, less its visit_wrapper (celpy sets none)

    def visit_children(self, tree: lark.Tree) -> list[Any]:
        # celpy's counts the nesting level for CEL_TRACE's indentation, the only reader of it.
        return [self._visit_tree(c) if isinstance(c, lark.Tree) else c for c in tree.children]

    def literal(self, tree: lark.Tree) -> Any:
        """A literal's value depends on its token only: made once per node (CEL values are immutable)."""
        value = tree.__dict__.get("cel_literal", _NOT_MADE)
        if value is _NOT_MADE:
            value = super().literal(tree)
            if not isinstance(value, celpy.CELEvalError):
                tree.cel_literal = value  # type: ignore[attr-defined]
        return value

    def sub_evaluator(self, ast: lark.Tree) -> "_Evaluator":
        """A macro's body (all, exists, map, ...), evaluated the same way."""
        return _Evaluator(ast, activation=self.activation)


class _Runner(celpy.InterpretedRunner):
    """celpy's InterpretedRunner with _Evaluator. Its base activation (annotations and functions) is built once:
    an evaluation binds its context in a clone of it (Evaluator.set_activation), never in it."""

    def evaluate(self, context: Any) -> Any:
        assert context, "an empty context would evaluate in the shared base activation"
        if not hasattr(self, "base_activation"):
            self.base_activation = self.new_activation()
        return _Evaluator(ast=self.ast, activation=self.base_activation).evaluate(context)


_ENV = celpy.Environment(runner_class=_Runner)


@functools.lru_cache(maxsize=None)
def program(expression: str) -> celpy.Runner:
    """Parse (celpy.CELParseError on a syntax error) and prepare an expression; cached per text."""
    return _ENV.program(_prepare(_ENV.compile(expression)), functions=_K8S_FUNCTIONS)


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    """The value of `expression`, or the CELEvalError it evaluates to (raised, never returned as a value)."""
    result = program(expression).evaluate(activation)
    if isinstance(result, celpy.CELEvalError):
        raise result
    return result


# --- The API server's bindings -------------------------------------------------------------------------------

def to_cel(value: Any) -> Any:
    return celpy.json_to_cel(value)


@dataclass
class Request:
    """admission.k8s.io AdmissionRequest, the fields a policy reads."""

    kind: str
    group: str = ""
    version: str = "v1"
    resource: str = ""
    operation: str = "CREATE"
    namespace: str = ""
    name: str = ""
    username: str = "alice"
    groups: tuple[str, ...] = ("team-engineers", "system:authenticated")
    sub_resource: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": {"group": self.group, "version": self.version, "kind": self.kind},
            "resource": {"group": self.group, "version": self.version, "resource": self.resource},
            "subResource": self.sub_resource, "operation": self.operation, "namespace": self.namespace,
            "name": self.name, "userInfo": {"username": self.username, "groups": list(self.groups)},
        }


@dataclass
class Decision:
    matched: bool
    denials: list[str] = field(default_factory=list)  # the message of each failed validation
    variables: dict[str, Any] = field(default_factory=dict)  # spec.variables as evaluated

    @property
    def allowed(self) -> bool:
        return not self.denials


def bindings(request: Request, obj: dict[str, Any] | None, old: dict[str, Any] | None = None,
             namespace: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
             grants: Iterable[tuple[str, str, str, str]] = ()) -> dict[str, Any]:
    """The API server's bindings: object and oldObject (null for CREATE / DELETE), request, namespaceObject,
    params (null without a paramKind) and authorizer (answered from `grants`: what RBAC grants the
    requester, see _AuthzStep)."""
    return {
        "object": to_cel(obj), "oldObject": to_cel(old), "request": to_cel(request.to_json()),
        "namespaceObject": to_cel(namespace), "params": to_cel(params),
        "authorizer": _AuthzStep(frozenset(grants)),
    }


def _variables_map(values: dict[str, Any]) -> celtypes.MapType:
    return celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})


def variables(spec: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """spec.variables, each evaluated in order from the ones before it. The API server evaluates them
    lazily: an error matters only where it is used, so it is kept as the variable's value and propagates
    from there (CEL's error semantics)."""
    out: dict[str, Any] = {}
    for v in spec.get("variables", []):
        try:
            out[v["name"]] = evaluate(v["expression"], {**base, "variables": _variables_map(out)})
        except celpy.CELEvalError as err:
            out[v["name"]] = err
    return out


def review(spec: dict[str, Any], request: Request, obj: dict[str, Any] | None,
           old: dict[str, Any] | None = None, namespace: dict[str, Any] | None = None,
           params: dict[str, Any] | None = None,
           grants: Iterable[tuple[str, str, str, str]] = ()) -> Decision:
    """What a ValidatingAdmissionPolicy `spec` decides for one request (matchConstraints are the caller's:
    this is the part after the resource rules and namespace selector matched): matchConditions, then
    variables, then every validation, with the bindings above. An expression that errors denies (the API
    server reports a failed evaluation as a denial under failurePolicy Fail; these policies all fail closed)."""
    base = bindings(request, obj, old, namespace, params, grants)
    for condition in spec.get("matchConditions", []):
        if not evaluate(condition["expression"], {**base, "variables": _variables_map({})}):
            return Decision(matched=False)
    values = variables(spec, base)
    activation = {**base, "variables": _variables_map(values)}
    denials = []
    for check in spec["validations"]:
        try:
            ok = evaluate(check["expression"], activation)
        except celpy.CELEvalError as err:
            denials.append(f"expression {check['expression'][:80]!r} failed: {err}")
            continue
        if not isinstance(ok, celtypes.BoolType):
            denials.append(f"expression {check['expression'][:80]!r} is not a bool: {ok!r}")
        elif not ok:
            if "messageExpression" in check:
                try:
                    denials.append(str(evaluate(check["messageExpression"], activation)))
                    continue
                except celpy.CELEvalError:
                    pass  # the API server falls back to the static message
            denials.append(check.get("message") or f"failed expression: {check['expression']}")
    return Decision(matched=True, denials=denials, variables=values)
