"""Kill tests for the mutants of ``ops/products.py``, ``ops/dispatch.py`` and ``ops/shapes.py`` that the
twelfth mutation-testing session found unpinned (benchmarks/README.md, "Twelfth session").

Black-box through the engine, like tests/test_mutation_kills_ops.py: each test analyses a small
function and asserts the shape, dtype, tags or conflicts the engine infers. Every shape and dtype
asserted is what torch 2.13 gives; where torch raises, the test asserts the engine's conflict or an
unknown value.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine.domain.values import PositionTag

from test_engine_ops import HEADER, _shape, analyze_src, run_of

CODE = cst.Module([])


def _code(node: cst.CSTNode | None) -> str | None:
    return None if node is None else CODE.code_for_node(node)


def _run(src: str, func: str = "f", header: str = HEADER):
    facts = analyze_src(header + textwrap.dedent(src))
    assert facts.internal_errors == []  # an op rule that raises gives up silently: never in these tests
    return {a.name: a.value for a in run_of(facts, func).assignments}, facts.conflicts


# --- ops/products.py -----------------------------------------------------------------------------


def test_untransposed_key_needs_a_feature_size_the_code_computed_and_named_rows() -> None:
    """``_untransposed_right`` through ``_feature_size`` and ``_rows``: ``q @ k`` with both ending in
    the same size is a ``matmul`` conflict (torch raises unless the key length equals the head dim)
    when that size is a name the code wrote (``d``) or a number (8), and the key's rows are a size
    the code named (``s``, ``S``: not a sequence length the engine made up). A last size the engine
    made up (the ``-1`` of a view of an unseen tensor) is no ground for a finding: no conflict."""
    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"], u, B: int, H: int, T: int, S: int):
            named = q @ k
            q2 = torch.zeros(B, H, T, 8)
            k2 = torch.zeros(B, H, S, 8)
            number = q2 @ k2
            q3 = u.view(B, H, T, -1)
            k3 = torch.zeros(B, H, S, q3.shape[-1])
            made_up = q3 @ k3
        """
    )
    assert [(c.kind, c.op, _code(c.node)) for c in conflicts] == [
        ("matmul", "matmul", "q @ k"),
        ("matmul", "matmul", "q2 @ k2"),
    ]
    assert "it contracts d with s" in conflicts[0].detail
    assert "it contracts 8 with S" in conflicts[1].detail


def test_outer_promotes_the_dtype_and_keeps_both_operands_lineage() -> None:
    """``_outer``: the result's dtype is torch's promotion (int64 with float32 is float32, int64 with
    bool is int64, bool with bool stays bool), its shape (n, m), the positions of either operand
    flow into it (rotary's ``outer(arange(T), inv_freq)``), and its node is the call."""
    values, conflicts = _run(
        """
        def f(inv: Float[Tensor, "k"], flags: Bool[Tensor, "m"], T: int, xs, ys):
            t = torch.arange(T)
            freqs = torch.outer(t, inv)
            swapped = torch.ger(inv, t)
            with_bool = torch.outer(t, flags)
            bools = torch.outer(flags, flags)
            floats = torch.outer(inv, inv)
            unseen = torch.outer(xs, ys)
        """
    )
    assert conflicts == []
    assert (_shape(values["unseen"]), values["unseen"].dtype) == (None, None)  # neither dtype known
    found = {name: (_shape(values[name]), values[name].dtype, values[name].has(PositionTag), _code(values[name].node)) for name in ("freqs", "swapped", "with_bool", "bools", "floats")}
    assert found == {
        "freqs": ("(T, k)", "float", True, "torch.outer(t, inv)"),
        "swapped": ("(k, T)", "float", True, "torch.ger(inv, t)"),
        "with_bool": ("(T, m)", "int", True, "torch.outer(t, flags)"),
        "bools": ("(m, m)", "bool", False, "torch.outer(flags, flags)"),
        "floats": ("(k, k)", "float", False, "torch.outer(inv, inv)"),
    }


def test_untransposed_key_in_two_and_three_dims_variadic_queries_and_vectors() -> None:
    """``_untransposed_right``'s guard on the operands' ranks and the dims it compares: a 2-D query
    against a 2-D key (``(t, d) @ (s, d)``) and a query of unknown leading rank (``(*batch, t, d)``)
    are judged like a 4-D one (a ``matmul`` conflict: torch raises unless s equals d); a vector
    query (``(d) @ (s, d)``) has no rows to judge (no conflict, no internal error; torch raises unless
    s equals d); a key transposed on purpose (``k.mT``) is no finding. The last dims are compared
    with the path's assumptions: ``assert ke.shape[-1] == q.shape[-1]`` makes ``e`` the query's ``d``."""
    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "t d"], k: Float[Tensor, "s d"], p: Float[Tensor, "*batch t d"], v: Float[Tensor, "d"], ke: Float[Tensor, "s e"]):
            flat = q @ k
            batched = p @ k
            vector = v @ k
            transposed = q @ k.mT

        def g(q: Float[Tensor, "t d"], ke: Float[Tensor, "s e"]):
            assert ke.shape[-1] == q.shape[-1]
            assumed = q @ ke
        """
    )
    assert [(c.kind, _code(c.node)) for c in conflicts] == [
        ("matmul", "q @ k"),
        ("matmul", "p @ k"),
        ("matmul", "q @ ke"),
    ]
    assert _shape(values["transposed"]) == "(t, s)"


def test_f_linear_of_a_fused_weight_tags_each_row_slice_as_its_own_projection() -> None:
    """``_linear``'s ``ProjectionTag``: the parameter's ident, the rows of a fused weight as its part
    (``W[:d]`` and ``W[d : 2 * d]`` are different projections; the whole weight has no part), the
    input it projected (given by position or as ``input=``) and the call as its node. Shapes as
    torch gives them: (b, t, 64) for a 64-row slice, (b, t, 192) for the whole (192, 64) weight."""
    from shapecheck.engine.domain.values import ProjectionTag, TensorValue

    src = """
        class FusedAttention(nn.Module):
            def __init__(self, dim=64):
                super().__init__()
                self.in_proj_weight = nn.Parameter(torch.randn(3 * dim, dim))

            def forward(self, query: Float[Tensor, "b t 64"]):
                d = self.in_proj_weight.shape[0] // 3
                q = F.linear(query, self.in_proj_weight[:d])
                k = F.linear(query, self.in_proj_weight[d : 2 * d])
                whole = F.linear(query, self.in_proj_weight)
                keyword = F.linear(input=query, weight=self.in_proj_weight)
        """
    values, conflicts = _run(src, "FusedAttention.forward")
    assert conflicts == []
    found = {}
    for name in ("q", "k", "whole", "keyword"):
        tag = values[name].tag(ProjectionTag)
        found[name] = (
            _shape(values[name]), str(tag.ident).removeprefix("<ModuleIdent ").removesuffix(">"), tag.part,
            _shape(tag.source) if isinstance(tag.source, TensorValue) else "no tensor", _code(tag.node),
        )
    assert found == {
        "q": ("(b, t, 64)", "self.in_proj_weight", (":d",), "(b, t, 64)", "F.linear(query, self.in_proj_weight[:d])"),
        "k": ("(b, t, 64)", "self.in_proj_weight", ("d : 2 * d",), "(b, t, 64)", "F.linear(query, self.in_proj_weight[d : 2 * d])"),
        "whole": ("(b, t, 192)", "self.in_proj_weight", (), "(b, t, 64)", "F.linear(query, self.in_proj_weight)"),
        "keyword": ("(b, t, 192)", "self.in_proj_weight", (), "(b, t, 64)", "F.linear(input=query, weight=self.in_proj_weight)"),
    }


def test_sdpa_reads_its_operands_by_position_and_keyword_and_names_its_stream_site() -> None:
    """``_sdpa``: the output is (..., t, e): the query's rows and the value's width (a key of another
    length s does not change it); a ``key=`` given by keyword is read (its positions flow out);
    a query of unknown leading rank gives an unknown shape; the stream the output continues passes
    through the call itself."""
    from shapecheck.engine.domain.tags import StreamTag

    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"], v: Float[Tensor, "b h s e"], p: Float[Tensor, "*batch t d"], table: Float[Tensor, "n d"]):
            kp = k + F.embedding(torch.arange(k.shape[2]), table)
            out = F.scaled_dot_product_attention(q, k, v)
            keyword = F.scaled_dot_product_attention(q, key=kp, value=v)
            variadic = F.scaled_dot_product_attention(p, k, v)
        """
    )
    assert conflicts == []
    assert {name: (_shape(values[name]), values[name].has(PositionTag)) for name in ("out", "keyword", "variadic")} == {
        "out": ("(b, h, t, e)", False),
        "keyword": ("(b, h, t, e)", True),
        "variadic": (None, False),
    }
    assert [_code(site) for site in values["out"].tag(StreamTag).sites] == ["F.scaled_dot_product_attention(q, k, v)"]


def test_results_name_their_call_positional_embeddings_einsum_of_unseen_operands_and_samples() -> None:
    """The node of ``_embedding_fn``'s positional result (a lookup of positions in a table), of the
    "maybe positional" tag ``_einsum`` / ``_einops_einsum`` put on a product with an operand the
    engine cannot see (none when every operand is seen), and ``_multinomial``'s int indices with no
    tags, which later ops read (a view of them). Shapes as torch: (T, d); (m, d) for the products."""
    values, conflicts = _run(
        """
        import einops
        def f(table: Float[Tensor, "n d"], probs: Float[Tensor, "b n"], unseen, T: int):
            pe = F.embedding(torch.arange(T), table)
            e1 = torch.einsum("ij,jk->ik", unseen, table)
            e2 = einops.einsum(unseen, table, "i j, j k -> i k")
            e3 = einops.einsum(table, table, "i j, k j -> i k")
            idx = torch.multinomial(probs, 1)
            flat = idx.view(-1)
        """
    )
    assert conflicts == []
    assert (_shape(values["pe"]), _code(values["pe"].node), values["pe"].tag(PositionTag).kind) == (
        "(T, d)", "F.embedding(torch.arange(T), table)", "embedding",
    )
    tags = {name: values[name].tag(PositionTag) for name in ("e1", "e2", "e3")}
    assert {name: tag and (tag.kind, _code(tag.node)) for name, tag in tags.items()} == {
        "e1": ("unknown", 'torch.einsum("ij,jk->ik", unseen, table)'),
        "e2": ("unknown", 'einops.einsum(unseen, table, "i j, j k -> i k")'),
        "e3": None,
    }
    assert _shape(values["e3"]) == "(n, n)"
    assert (values["idx"].dtype, values["idx"].tags, values["flat"].dtype) == ("int", (), "int")


def test_untransposed_key_of_two_layer_outputs_alike_even_with_rows_made_up() -> None:
    """``_activations_alike``: a query and a key that are both layer outputs (``LayerOutputTag``) of
    the same rank (3 or more) and the same batch dims the code computed are laid out alike, so the
    key's rows are key positions even where their count was made up (the ``-1`` of a view of an
    unseen memory): ``q @ k`` untransposed is a ``matmul`` conflict (torch raises unless the length
    equals 64). Not alike, so no finding on a made-up length: a key that is no layer output, 2-D
    layer outputs, and a key whose batch dim (2) is not the query's (b)."""
    values, conflicts = _run(
        """
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.q = nn.Linear(64, 64)
                self.k = nn.Linear(64, 64)

            def forward(self, x: Float[Tensor, "b t 64"], x2: Float[Tensor, "t 64"], mem):
                B, T, _ = x.shape
                q = self.q(x)
                k = self.k(mem.view(B, -1, 64))
                alike = q @ k
                plain = q @ mem.view(B, -1, 64)
                flat = self.q(x2) @ self.k(mem.view(-1, 64))
                other_batch = q @ self.k(mem.reshape(2, -1, 64))
        """,
        "M.forward",
    )
    assert [(c.kind, _code(c.node)) for c in conflicts] == [("matmul", "q @ k")]
    assert (_shape(values["q"]), _shape(values["k"])) == ("(b, t, 64)", "(b, _, 64)")


# --- ops/dispatch.py -----------------------------------------------------------------------------


def test_module_attributes_name_their_node_and_unseen_values_take_tensor_methods() -> None:
    """``attribute``: a layer's ``weight`` / ``bias`` read through a module (``self.proj.weight``),
    through a subclass of a torch layer (``self.weight`` inside ``MyLinear``) and through a module
    chosen on an undecided branch (``EitherModule``: its options' weights joined) are tensors whose
    node is the attribute read (shapes as torch: (16, 8), (16), (4, 8)). On a value the engine cannot
    see, a tensor method (``view``, in ``OPS``) and an alias of one (``swapaxes``) are methods that
    make tensors; ``self.eval()`` and ``self.to_empty(device=...)`` of a module are the module itself
    (torch returns ``self``), its ``register_buffer`` / ``register_parameter`` make attributes, and an
    attribute it never set is unknown (not a method of the module)."""
    from shapecheck.engine.domain.values import UNKNOWN, ObjectValue, TensorValue

    src = """
        class MyLinear(nn.Linear):
            def forward(self, x):
                own = self.weight
                return own

        class M(nn.Module):
            def __init__(self, big: bool):
                super().__init__()
                self.proj = nn.Linear(8, 16)
                self.either = nn.Linear(8, 16) if big else nn.Linear(8, 32)
                self.mine = MyLinear(8, 4)
                self.register_buffer("mask", torch.ones(4, 4))
                self.register_parameter("gain", nn.Parameter(torch.ones(8)))

            def forward(self, mem):
                w = self.proj.weight
                b = self.proj.bias
                ew = self.either.weight
                mw = self.mine(mem)
                v = mem.view(2, -1, 8)
                s = mem.swapaxes(0, 1)
                keep = self.eval()
                empty = self.to_empty(device="cpu")
                mask = self.mask
                gain = self.gain
                missing = self.never_set
        """
    values, conflicts = _run(src, "M.forward")
    assert conflicts == []
    assert {name: (_shape(values[name]), _code(values[name].node)) for name in ("w", "b", "mw")} == {
        "w": ("(16, 8)", "self.proj.weight"),
        "b": ("(16)", "self.proj.bias"),
        "mw": ("(4, 8)", "self.weight"),
    }
    assert _code(values["ew"].node) == "self.either.weight"
    assert _shape(values["v"]) == "(2, _, 8)"
    assert type(values["s"]) is TensorValue and values["s"].shape is None
    assert type(values["keep"]) is ObjectValue and type(values["empty"]) is ObjectValue
    assert (_shape(values["mask"]), _shape(values["gain"])) == ("(4, 4)", "(8)")
    assert values["missing"] is UNKNOWN  # an attribute the module never set is no method of it


def test_invert_of_a_tensor_negates_a_triangle_and_not_of_a_tensor_is_no_tensor() -> None:
    """``unary``: ``~`` of a bool tensor is the elementwise negation (a causal triangle's tag turns
    negated, its node is the ``~`` expression, shape and dtype as torch: (T, T) bool), ``-`` keeps
    the tensor's shape, and ``not`` of a tensor is Python's bool of unknown value, never a tensor."""
    from shapecheck.engine.domain.values import UNKNOWN, TriangleTag

    values, conflicts = _run(
        """
        def f(T: int):
            tri = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
            kept = ~tri
            neg = -torch.ones(T, 3)
            flag = not tri
        """
    )
    assert conflicts == []
    assert (values["tri"].tag(TriangleTag).negated, values["kept"].tag(TriangleTag).negated) == (False, True)
    assert (_shape(values["kept"]), values["kept"].dtype, _code(values["kept"].node)) == ("(T, T)", "bool", "~tri")
    assert (_shape(values["neg"]), values["neg"].dtype) == ("(T, 3)", "float")
    assert values["flag"] is UNKNOWN


# --- ops/shapes.py -------------------------------------------------------------------------------


def test_pad_by_keyword_unknown_amounts_on_either_side_and_amounts_torch_rejects() -> None:
    """``_pad``: ``pad=`` by keyword is read; an amount the code names (``n``) grows its axis by it,
    before or after, on the last axis or the one before (shapes as torch: (b, t, d+3), (b, t, d+n+1),
    (b, n+t+1, d)); a source of unknown leading rank gives an unknown shape; ids padded stay int and
    keep their positions ((T+2), int64 in torch). Amounts torch rejects (an odd count, more axes than
    the tensor has: torch raises) give sizes the engine made up, never a computed one."""
    facts = analyze_src(HEADER + textwrap.dedent(
        """
        def f(x: Float[Tensor, "b t d"], p: Float[Tensor, "*batch d"], n: int, T: int):
            kw = F.pad(x, pad=(1, 2))
            front = F.pad(x, (n, 1))
            second = F.pad(x, (0, 0, 1, n))
            var = F.pad(p, (1, 1))
            pos = F.pad(torch.arange(T), (2, 0))
            odd = F.pad(x, (1, 2, 3))
            many = F.pad(x, (1, 1, 1, 1, 1, 1, 1, 1))
        """
    ))
    assert facts.internal_errors == [] and facts.conflicts == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert {name: (_shape(values[name]), values[name].dtype, _code(values[name].node)) for name in ("kw", "front", "second", "var", "pos")} == {
        "kw": ("(b, t, d+3)", "float", "F.pad(x, pad=(1, 2))"),
        "front": ("(b, t, d+n+1)", "float", "F.pad(x, (n, 1))"),
        "second": ("(b, n+t+1, d)", "float", "F.pad(x, (0, 0, 1, n))"),
        "var": (None, "float", "F.pad(p, (1, 1))"),
        "pos": ("(T+2)", "int", "F.pad(torch.arange(T), (2, 0))"),
    }
    assert values["pos"].tag(PositionTag) is not None
    for name in ("odd", "many"):
        assert values[name].dtype == "float"
        assert values[name].shape is not None and all(facts.made_up(dim) for dim in values[name].shape.dims)


def test_pad_keeps_positions_forgets_the_token_window_and_makes_up_an_unreadable_amount() -> None:
    """``_pad``: the positions of the source are its own (the tag of ``arange``, not a copy changed
    by the lineage), the tokens of a model's logits padded along the sequence may have moved (their
    ``SequenceOriginTag`` becomes opaque), and an amount that is no size (``1.5``: torch raises) makes
    the padded axis a size the engine made up, the others kept (shapes as torch: (4, 17, 8))."""
    from shapecheck.engine.domain.tags import SequenceOriginTag

    facts = analyze_src(HEADER + textwrap.dedent(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(40, 8)

            def forward(self, idx):
                return self.emb(idx)


        def f(x: Float[Tensor, "b t d"], xs, T: int):
            model = Net()
            ids = torch.randint(0, 40, (4, 16))
            logits = model(ids)
            padded_logits = F.pad(logits, (0, 0, 1, 0))
            t = torch.arange(T)
            pos = F.pad(t, (2, 0))
            unread = F.pad(x, (1.5, 1))
        """
    ))
    assert facts.internal_errors == [] and facts.conflicts == []
    values = {a.name: a.value for a in run_of(facts, "f").assignments}
    assert values["pos"].tag(PositionTag) == values["t"].tag(PositionTag)
    assert not values["logits"].tag(SequenceOriginTag).opaque and values["padded_logits"].tag(SequenceOriginTag).opaque
    assert _shape(values["padded_logits"]) == "(4, 17, 8)"
    dims = values["unread"].shape.dims
    assert [str(d) for d in dims[:2]] == ["b", "t"] and len(dims) == 3 and facts.made_up(dims[2])


def test_matmul_operands_by_keyword_and_products_over_a_reordered_key_token_axis() -> None:
    """``_matmul`` reads ``input=`` / ``other=`` (matmul) and ``mat2=`` (bmm, mm) by keyword (shapes as
    torch: (i, m), (n, i, m), (i, m)). ``_token_contraction``: a query times a key reordered with its
    features still last (``k.transpose(1, 2)`` of a 4-D key, ``k.transpose(0, 1)`` of a 3-D one)
    contracts a token or head axis of the key that is not provably the query's feature size: the
    shape is unknown (torch raises unless the sizes happen to agree). Attention weights times such a
    value are exempt: their last axis is key positions, and the product is (b, h, t, d), the shape
    torch gives whenever it runs (e = t)."""
    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b e h s"], q3: Float[Tensor, "h t d"], k3: Float[Tensor, "e h s"], v: Float[Tensor, "b e h d"], a3: Float[Tensor, "n i j"], b3: Float[Tensor, "n j m"], a2: Float[Tensor, "i j"], b2: Float[Tensor, "j m"]):
            four = q @ k.transpose(1, 2)
            three = q3 @ k3.transpose(0, 1)
            p = torch.softmax(q @ q.mT, dim=-1)
            out = p @ v.transpose(1, 2)
            mk = torch.matmul(input=a2, other=b2)
            bk = torch.bmm(input=a3, mat2=b3)
            mm = torch.mm(a2, mat2=b2)
        """
    )
    assert conflicts == []
    assert {name: _shape(values[name]) for name in ("four", "three", "out", "mk", "bk", "mm")} == {
        "four": None, "three": None, "out": "(b, h, t, d)", "mk": "(i, m)", "bk": "(n, i, m)", "mm": "(i, m)",
    }


def test_linear_and_einops_conflicts_and_keys_whose_rows_are_no_named_size() -> None:
    """``_linear``: ``F.linear`` of an input whose last dim (64) is not the weight's (32) is a
    ``linear`` conflict named after ``F.linear`` (torch raises), of a weight the engine cannot see an
    unknown shape. ``_einops_einsum`` / ``_einops``: their conflicts (an index of 3 and 4, 12 split in
    groups of 5: einops raises) are recorded. ``_untransposed_right`` through ``_named``: a key whose
    rows are a number (5) or, by the path's assumption, the head dim itself is no finding (the rows
    must be another size the code named; torch runs the second)."""
    values, conflicts = _run(
        """
        import einops
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(10, 32))

            def forward(self, y: Float[Tensor, "b t 64"], q: Float[Tensor, "t d"], k: Float[Tensor, "s d"], unseen):
                wrong = F.linear(y, self.w)
                opaque = F.linear(y, unseen)
                e = einops.einsum(torch.randn(2, 3), torch.randn(4, 5), "i j, j k -> i k")
                r = einops.rearrange(torch.randn(2, 12), "b (h d) -> b h d", h=5)
                five = q @ torch.zeros(5, q.shape[-1])
                assert k.shape[0] == q.shape[-1]
                square = q @ k
        """,
        "M.forward",
    )
    assert [(c.kind, c.op, _code(c.node)) for c in conflicts] == [
        ("linear", "linear", "F.linear(y, self.w)"),
        ("matmul", "einsum", 'einops.einsum(torch.randn(2, 3), torch.randn(4, 5), "i j, j k -> i k")'),
        ("heads", "rearrange", 'einops.rearrange(torch.randn(2, 12), "b (h d) -> b h d", h=5)'),
    ]
    assert conflicts[0].detail.startswith("F.linear expects 32 input features")
    assert (_shape(values["opaque"]), values["opaque"].dtype) == (None, "float")


def test_untransposed_weight_rows_variadic_layer_outputs_and_batch_dims_equal_by_assumption() -> None:
    """``_untransposed_right`` against a parameter: ``h.view(-1, dim) @ self.emb.weight`` (rows the
    engine made up, a (vocab, dim) weight the constructor named) is a ``matmul`` conflict: the weight
    is no query, so any row count of the left operand will do (torch raises unless vocab equals
    dim). ``_activations_alike``: layer outputs of unknown leading rank are not alike (no finding on
    a made-up key length), and batch dims equal only by the path's assumption (``assert n == B``)
    are alike (a ``matmul`` conflict: torch raises unless the length equals 64)."""
    values, conflicts = _run(
        """
        class M(nn.Module):
            def __init__(self, vocab: int, dim: int):
                super().__init__()
                self.emb = nn.Embedding(vocab, dim)
                self.q = nn.Linear(64, 64)
                self.k = nn.Linear(64, 64)

            def forward(self, x: Float[Tensor, "b t 64"], p: Float[Tensor, "*batch t 64"], mem, h, n: int):
                B = x.shape[0]
                tied = h.view(-1, self.emb.weight.shape[1]) @ self.emb.weight
                var = self.q(p) @ self.k(mem.view(B, -1, 64))
                assert n == B
                assumed = self.q(x) @ self.k(mem.view(n, -1, 64))
        """,
        "M.forward",
    )
    assert [(c.kind, _code(c.node)) for c in conflicts] == [
        ("matmul", "h.view(-1, self.emb.weight.shape[1]) @ self.emb.weight"),
        ("matmul", "self.q(x) @ self.k(mem.view(n, -1, 64))"),
    ]
    assert "it contracts dim with vocab" in conflicts[0].detail


def test_a_reordered_key_whose_token_axis_is_the_head_dim_by_assumption_is_contracted() -> None:
    """``_token_contraction`` compares the contracted sizes with the path's assumptions: after
    ``assert k3.shape[0] == q3.shape[-1]`` the reordered key's axis is the query's feature size, so
    the product is read: (h, t, s), torch's shape."""
    values, conflicts = _run(
        """
        def f(q3: Float[Tensor, "h t d"], k3: Float[Tensor, "e h s"]):
            assert k3.shape[0] == q3.shape[-1]
            three = q3 @ k3.transpose(0, 1)
        """
    )
    assert conflicts == [] and _shape(values["three"]) == "(h, t, s)"


def test_an_untransposed_key_computed_by_a_conflicting_op_is_its_echo() -> None:
    """``_after_a_conflict``: a key computed by an op whose shapes conflicted (``F.linear`` with 64
    input features against a weight for 32: torch raises) carries that conflict's node among its
    causes, so ``q @ kk`` is not a second finding; a key whose causes name no conflict (a ``cat``,
    while another op of the file conflicted) is judged: a ``matmul`` conflict (torch raises unless s
    equals 10)."""
    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b t 10"], y: Float[Tensor, "b s 64"]):
            kk = F.linear(y, torch.randn(10, 32))
            echo = q @ kk

        def g(q: Float[Tensor, "b t 10"], k2: Float[Tensor, "b s 5"]):
            joined = torch.cat([k2, k2], dim=-1)
            fresh = q @ joined
        """
    )
    assert [(c.kind, _code(c.node)) for c in conflicts] == [
        ("linear", "F.linear(y, torch.randn(10, 32))"),
        ("matmul", "q @ joined"),
    ]



def test_a_key_transposed_over_the_wrong_axes_is_a_key_transpose_conflict() -> None:
    """``matmul_values``' first check: ``q @ k.transpose(1, 3)`` (and the same order by ``permute``)
    contracts the query's features with the key's length: a ``key-transpose`` conflict of the op
    ``matmul`` at the product, saying which sizes it contracts (torch raises unless they agree)."""
    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"]):
            s1 = q @ k.transpose(1, 3)

        def g(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"]):
            s3 = q @ k.permute(0, 3, 2, 1)
        """
    )
    assert [(c.kind, c.op, _code(c.node)) for c in conflicts] == [
        ("key-transpose", "matmul", "q @ k.transpose(1, 3)"),
        ("key-transpose", "matmul", "q @ k.permute(0, 3, 2, 1)"),
    ]
    assert all(c.detail.endswith("the key is transposed over the wrong axes; it contracts d with s") for c in conflicts)


def test_scores_name_their_product_and_take_the_key_scale_before_or_after_the_transpose() -> None:
    """``matmul_values``' scores: the ``ScoresTag`` names the product, with the query's head dim;
    a key scaled after its transpose (``k.mT * 0.125``) or before it (``(k * 0.125).mT``) scales the
    scores once, by 0.125; an unscaled key does not. Shapes as torch: (b, h, t, s)."""
    from shapecheck.engine.domain.values import ScaleTag, ScoresTag

    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"]):
            plain = q @ k.mT
            after = q @ (k.mT * 0.125)
            before = q @ (k * 0.125).mT
        """
    )
    assert conflicts == []
    found = {}
    for name in ("plain", "after", "before"):
        scores, scale = values[name].tag(ScoresTag), values[name].tag(ScaleTag)
        found[name] = (_shape(values[name]), _code(scores.node), str(scores.head_dim), scale and scale.factor.coef)
    assert found == {
        "plain": ("(b, h, t, s)", "q @ k.mT", "d", None),
        "after": ("(b, h, t, s)", "q @ (k.mT * 0.125)", "d", 0.125),
        "before": ("(b, h, t, s)", "q @ (k * 0.125).mT", "d", 0.125),
    }


def test_attention_output_records_its_softmax_and_the_key_axis() -> None:
    """``matmul_values``: probabilities times values is an attention output whose tag names the
    product, the softmax that made the probabilities and the axis of them contracted with the values
    (-1, the keys). Shape as torch: (b, h, t, e)."""
    from shapecheck.engine.domain.tags import AttentionOutputTag

    values, conflicts = _run(
        """
        def f(q: Float[Tensor, "b h t d"], k: Float[Tensor, "b h s d"], v: Float[Tensor, "b h s e"]):
            p = torch.softmax(q @ k.mT, dim=-1)
            out = p @ v
        """
    )
    assert conflicts == []
    tag = values["out"].tag(AttentionOutputTag)
    assert (_shape(values["out"]), _code(tag.node), _code(tag.softmax), tag.key_axis) == (
        "(b, h, t, e)", "p @ v", "torch.softmax(q @ k.mT, dim=-1)", -1,
    )
