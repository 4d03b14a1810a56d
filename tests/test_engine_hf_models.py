"""Whole Hugging Face style models in one file: what the engine must follow for a rule to see
from the embeddings to the attention.

A transformers model file nests seven deep (``ForQuestionAnswering`` -> ``Model`` -> ``Encoder`` ->
``Layer`` -> ``Attention`` -> ``SelfAttention`` -> ``eager_attention_forward``), swaps its input
embeddings through a setter (``set_input_embeddings(self, value): self.embeddings.word_embeddings =
value``), and builds its padding mask with ``create_bidirectional_mask`` from the library. The
setter runs standalone with ``value`` unknown; that must not make ``forward`` see an unknown layer.
The padding mask hides padding: it must not count as "may carry positions".
"""

from __future__ import annotations

from engine_snippets import findings_on_lines, standalone_shapes

ENCODER = '''
import torch
from torch import nn

from ...masking_utils import create_bidirectional_mask
from ...modeling_utils import ALL_ATTENTION_FUNCTIONS


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


class TextEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)))

    def forward(self, input_ids=None, inputs_embeds=None):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        embeddings = inputs_embeds
        position_embeddings = self.position_embeddings(position_ids)
        POSITIONS
        return self.LayerNorm(embeddings)


class TextSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.scaling = self.head_size**-0.5
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_size)
        query_states = self.query(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.key(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.value(hidden_states).view(hidden_shape).transpose(1, 2)
        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, eager_attention_forward
        )
        attn_output, attn_weights = attention_interface(
            self, query_states, key_states, value_states, attention_mask, scaling=self.scaling, **kwargs
        )
        return attn_output.reshape(*input_shape, -1).contiguous(), attn_weights


class TextAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = TextSelfAttention(config)
        self.output = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        attn_output, _ = self.self(hidden_states, attention_mask, **kwargs)
        return self.output(attn_output) + hidden_states


class TextLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = TextAttention(config)

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        return self.attention(hidden_states, attention_mask, **kwargs)


class TextEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([TextLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask, **kwargs)
        return hidden_states


class TextModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = TextEmbeddings(config)
        self.encoder = TextEncoder(config)

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.embeddings.word_embeddings = value

    def forward(self, input_ids=None, attention_mask=None, inputs_embeds=None, **kwargs):
        embedding_output = self.embeddings(input_ids=input_ids, inputs_embeds=inputs_embeds)
        attention_mask = create_bidirectional_mask(
            config=self.config, input_embeds=embedding_output, attention_mask=attention_mask
        )
        return self.encoder(embedding_output, attention_mask=attention_mask, **kwargs)


class TextForQuestionAnswering(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.text = TextModel(config)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        sequence_output = self.text(input_ids, attention_mask=attention_mask, **kwargs)
        start_logits, end_logits = self.qa_outputs(sequence_output).split(1, dim=-1)
        return start_logits.squeeze(-1), end_logits.squeeze(-1)
'''


def sc303(positions: str) -> list[str]:
    source = ENCODER.replace("POSITIONS", positions)
    return [line for code, line in findings_on_lines(source, "modeling_text.py") if code == "SC303"]


def test_position_embeddings_computed_and_dropped_are_reported_where_they_are_computed():
    # Seven deep, a setter for the input embeddings, the library's padding mask: the tokens reach
    # eager attention with no positions, and the fix is to add the embeddings computed there.
    assert sc303("pass") == ["position_embeddings = self.position_embeddings(position_ids)"]


def test_position_embeddings_added_are_clean():
    assert sc303("embeddings = embeddings + position_embeddings") == []
    assert sc303("embeddings += position_embeddings") == []


def test_a_causal_mask_from_the_library_keeps_the_rule_quiet():
    # A causal mask does tell positions apart (a decoder without positional encoding can learn
    # them), and the library's causal builder is not read: no finding.
    source = ENCODER.replace("POSITIONS", "pass").replace("create_bidirectional_mask", "create_causal_mask")
    assert [code for code, _ in findings_on_lines(source, "modeling_text.py") if code == "SC303"] == []


def test_tokens_with_no_positional_embedding_in_the_model_are_reported_at_the_lookup():
    source = ENCODER.replace("POSITIONS", "pass").replace(
        "        position_embeddings = self.position_embeddings(position_ids)\n", ""
    )
    assert [line for code, line in findings_on_lines(source, "modeling_text.py") if code == "SC303"] == [
        "inputs_embeds = self.word_embeddings(input_ids)"
    ]


def test_a_setter_run_alone_does_not_replace_the_layer_forward_uses():
    # The model with the setter is the outermost one (no task head built around it): its methods
    # run standalone in turn, the setter's with ``value`` unknown, and ``forward`` must still see
    # the embedding layer the constructor built.
    head = ENCODER.index("class TextForQuestionAnswering")
    model_alone = ENCODER[:head].replace("POSITIONS", "pass")
    setter = "    def set_input_embeddings(self, value):\n        self.embeddings.word_embeddings = value\n"
    assert setter in model_alone
    expected = ["position_embeddings = self.position_embeddings(position_ids)"]
    assert [line for code, line in findings_on_lines(model_alone, "modeling_text.py") if code == "SC303"] == expected
    without_setter = model_alone.replace(setter, "")
    assert [line for code, line in findings_on_lines(without_setter, "modeling_text.py") if code == "SC303"] == expected


DECODER = '''
import torch
from torch import nn

from ...cache_utils import Cache
from ...masking_utils import create_causal_mask
from ...modeling_utils import ALL_ATTENTION_FUNCTIONS


class DecoderRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    attn_weights = SCORES
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


class DecoderAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.q_norm = DecoderRMSNorm(self.head_dim)
        self.k_norm = DecoderRMSNorm(self.head_dim)

    def forward(self, hidden_states, position_embeddings, attention_mask, encoder_states=None, past_key_values=None, **kwargs):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        if past_key_values is not None:
            if encoder_states is not None:
                cache = past_key_values.cross_attention_cache
            else:
                cache = past_key_values.self_attention_cache
        if encoder_states is not None and past_key_values is not None:
            key_states = cache.layers[self.layer_idx].keys
            value_states = cache.layers[self.layer_idx].values
        else:
            key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
            cos, sin = position_embeddings
            query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
            if past_key_values is not None:
                key_states, value_states = cache.update(key_states, value_states, self.layer_idx)
        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, eager_attention_forward
        )
        attn_output, attn_weights = attention_interface(
            self, query_states, key_states, value_states, attention_mask, scaling=self.scaling, **kwargs
        )
        return self.o_proj(attn_output.reshape(*input_shape, -1).contiguous())


class DecoderModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([DecoderAttention(config, i) for i in range(config.num_hidden_layers)])

    def forward(self, input_ids, position_embeddings, attention_mask=None, encoder_states=None, past_key_values=None):
        inputs_embeds = self.embed_tokens(input_ids)
        causal_mask = create_causal_mask(
            config=self.config, input_embeds=inputs_embeds, attention_mask=attention_mask,
            past_key_values=past_key_values,
        )
        hidden_states = inputs_embeds
        for layer in self.layers:
            hidden_states = layer(
                hidden_states, position_embeddings, causal_mask, encoder_states, past_key_values=past_key_values
            )
        return hidden_states
'''


def sc101(scores: str, source: str = DECODER) -> list[str]:
    source = source.replace("SCORES", scores)
    return [line for code, line in findings_on_lines(source, "modeling_decoder.py") if code == "SC101"]


def test_unscaled_scores_of_a_cached_decoder_with_the_library_causal_mask_are_found():
    # The key comes back from ``past_key_values.update`` (known only by its trailing sizes after
    # the per-head norm), or on the cross path from the cache itself; the causal mask from the
    # library scales nothing. The scores are unscaled on every path the engine follows.
    assert sc101("torch.matmul(query, key.transpose(2, 3))") == [
        "attn_weights = torch.matmul(query, key.transpose(2, 3))"
    ]


def test_scaled_scores_of_a_cached_decoder_are_clean():
    assert sc101("torch.matmul(query, key.transpose(2, 3)) * scaling") == []


def test_each_way_the_key_or_the_mask_could_hide_the_missing_scale():
    unscaled = "torch.matmul(query, key.transpose(2, 3))"
    expected = ["attn_weights = torch.matmul(query, key.transpose(2, 3))"]
    # Only the cache update (no cross path read from the cache):
    no_cross = DECODER.replace(
        "        if encoder_states is not None and past_key_values is not None:\n"
        "            key_states = cache.layers[self.layer_idx].keys\n"
        "            value_states = cache.layers[self.layer_idx].values\n"
        "        else:\n",
        "        if True:\n",
    )
    assert sc101(unscaled, no_cross) == expected
    # Only the cross path read from the cache (no update):
    no_update = DECODER.replace(
        "            if past_key_values is not None:\n"
        "                key_states, value_states = cache.update(key_states, value_states, self.layer_idx)\n",
        "",
    )
    assert sc101(unscaled, no_update) == expected


def test_a_cache_gives_back_a_key_known_by_its_trailing_sizes_with_its_width():
    # A per-head norm or rotary embedding of a head split of unknown rank leaves ``(*, d)``; the
    # cache appends past positions but the feature width stays.
    source = """
    from jaxtyping import Float
    from torch import Tensor


    def update_cache(cache, key: Float[Tensor, "*batch dim"], value: Float[Tensor, "*batch dim"]):
        if cache is not None:
            key, value = cache.update(key, value, 0)
        return key
    """
    assert standalone_shapes(source, "update_cache", "key") == ["(*, dim)"]
