"""Real diffusers pipelines, a real Qwen2.5-VL and a real Qwen3.5-VL, with tiny random weights,
built offline.

Every class is the one the hub checkpoints use; only the sizes are small (hidden sizes of 16,
one or two layers) and the weights random, seeded. Tokenizers are byte-level BPE with no merges,
one token per byte (the alphabet of GPT-2 / Qwen byte-level BPE), so any text encodes; the
special tokens each model's prompt template needs are added on top. Nothing touches the network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tokenizers import AddedToken, pre_tokenizers
from transformers import (
    CLIPTextConfig,
    CLIPTextModel,
    CLIPTokenizer,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2_5_VLProcessor,
    Qwen2Tokenizer,
    Qwen2VLImageProcessor,
    Qwen2VLVideoProcessor,
    Qwen3_5Config,
    Qwen3_5ForConditionalGeneration,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3VLProcessor,
    Qwen3VLVideoProcessor,
    T5Config,
    T5EncoderModel,
    T5Tokenizer,
)

BYTES = sorted(pre_tokenizers.ByteLevel.alphabet())
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                 "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# Qwen2.5-VL's chat template, reduced to what one user turn of images and text needs.
QWEN_VL_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}"
    "{% if add_vision_id %}Picture {{ loop.index }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% else %}{{ item['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# Qwen3's, reduced: FLUX.2 [klein] asks for it with enable_thinking=False.
QWEN3_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}")


def qwen_tokenizer(chat_template: str, extra_tokens: tuple[str, ...] = ()) -> Qwen2Tokenizer:
    vocab = {ch: i for i, ch in enumerate(BYTES)}
    for token in QWEN_SPECIALS:
        vocab[token] = len(vocab)
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=[], chat_template=chat_template)
    tokenizer.add_special_tokens({"additional_special_tokens": QWEN_SPECIALS[1:]})
    tokenizer.add_tokens(list(extra_tokens))  # whole words, kept by decode
    return tokenizer


def tiny_qwen2_5_vl(extra_tokens: tuple[str, ...] = ()) -> tuple[Any, Qwen2_5_VLProcessor]:
    """A Qwen2_5_VLForConditionalGeneration and its processor; images become 4 to 16 tokens."""
    tokenizer = qwen_tokenizer(QWEN_VL_TEMPLATE, extra_tokens)
    pixels = {"shortest_edge": 28 * 28 * 4, "longest_edge": 28 * 28 * 16}
    processor = Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=pixels), tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(size=pixels), chat_template=QWEN_VL_TEMPLATE)
    ids = tokenizer.convert_tokens_to_ids
    special = {"bos_token_id": ids("<|endoftext|>"), "eos_token_id": ids("<|im_end|>"),
               "pad_token_id": ids("<|endoftext|>")}
    config = Qwen2_5_VLConfig(
        text_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "num_key_value_heads": 1,
                     "vocab_size": len(tokenizer), "max_position_embeddings": 2048,
                     "tie_word_embeddings": False,
                     "rope_scaling": {"mrope_section": [1, 1, 2], "rope_type": "default",
                                      "type": "default"}, **special},
        vision_config={"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2,
                       "out_hidden_size": 16, "fullatt_block_indexes": [0]},
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=False, **special)
    torch.manual_seed(0)
    return Qwen2_5_VLForConditionalGeneration(config).eval(), processor


QREALIGN_LEVELS = ("excellent", "good", "fair", "poor", "bad")  # pyiqa's qrealign_arch.LEVELS


def tiny_qwen3_5_vl(folder: Path, dtype: torch.dtype = torch.float32) -> Path:
    """A Qwen3_5ForConditionalGeneration (one linear-attention and one full-attention layer, a
    one-block vision tower with Qwen3.5's 16-pixel patches merged 2 x 2) with its processor,
    saved to `folder` as a Q-ReAlign checkpoint is: config, safetensors, tokenizer, image
    processor, chat template. Q-ReAlign's level words (" excellent", …) are one token each, as
    in the real vocabulary, so the five probabilities it weighs are five different tokens.
    Images are not resized between 64 x 64 pixels and 4096 x 4096. `dtype`: the weights' dtype
    as saved (Mini's own is bf16), which pyiqa's `dtype="auto"` loads."""
    tokenizer = qwen_tokenizer(QWEN_VL_TEMPLATE)
    tokenizer.add_tokens([AddedToken(" " + word, normalized=False) for word in QREALIGN_LEVELS])
    pixels = {"shortest_edge": 64 * 64, "longest_edge": 4096 * 4096}
    processor = Qwen3VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=pixels, patch_size=16, merge_size=2),
        tokenizer=tokenizer, video_processor=Qwen3VLVideoProcessor(),
        chat_template=QWEN_VL_TEMPLATE)
    ids = tokenizer.convert_tokens_to_ids
    special = {"bos_token_id": ids("<|endoftext|>"), "eos_token_id": ids("<|im_end|>"),
               "pad_token_id": ids("<|endoftext|>")}
    config = Qwen3_5Config(
        text_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                     "layer_types": ["linear_attention", "full_attention"],
                     "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
                     "linear_key_head_dim": 8, "linear_value_head_dim": 8,
                     "linear_num_key_heads": 1, "linear_num_value_heads": 2,
                     "vocab_size": len(tokenizer), "max_position_embeddings": 4096,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                         "partial_rotary_factor": 1.0,
                                         "mrope_section": [1, 1, 2], "mrope_interleaved": True},
                     **special},
        vision_config={"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2,
                       "out_hidden_size": 16, "patch_size": 16, "spatial_merge_size": 2,
                       "temporal_patch_size": 2, "num_position_embeddings": 64},
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"),
        **special)
    torch.manual_seed(0)
    Qwen3_5ForConditionalGeneration(config).to(dtype).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def script_replies(model: Any, tokenizer: Any, tokens: list[str]) -> None:
    """Rewire a tiny Qwen2.5-VL so that greedy decoding after `tokens[0]` says `tokens[1:]`.

    Every layer's output projections are zeroed, so the last hidden state is the current token's
    own embedding; `tokens` get orthogonal embeddings, and the head maps each to its successor.
    """
    ids = tokenizer.convert_tokens_to_ids(tokens)
    language = model.model.language_model
    with torch.no_grad():
        for layer in language.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embeddings, head = language.embed_tokens.weight, model.lm_head.weight
        hidden = embeddings.shape[1]
        if len(ids) > hidden:
            raise ValueError(f"at most {hidden} scripted tokens")
        embeddings[ids] = torch.eye(hidden)[: len(ids)]
        head.mul_(0.01)
        for position, following in enumerate(ids[1:]):  # token `position` -> the next one
            head[following] = 10 * torch.eye(hidden)[position]


def ready(pipeline: Any) -> Any:
    """As `from_pretrained` leaves a pipeline: every model in eval mode (T5's dropout off), and
    no progress bars in the test log."""
    for component in pipeline.components.values():
        if isinstance(component, torch.nn.Module):
            component.eval()
    pipeline.set_progress_bar_config(disable=True)
    return pipeline


def byte_clip_tokenizer() -> CLIPTokenizer:
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for ch in BYTES:  # CLIP's BPE marks a word's last piece with </w>
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)


def char_t5_tokenizer() -> T5Tokenizer:
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'-"
    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -1.0)]
    return T5Tokenizer(vocab=pieces + [(ch, -2.0) for ch in letters], extra_ids=0)


def tiny_qwen_image_edit() -> Any:
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        QwenImageEditPlusPipeline,
        QwenImageTransformer2DModel,
    )

    text_encoder, processor = tiny_qwen2_5_vl()
    torch.manual_seed(0)
    transformer = QwenImageTransformer2DModel(
        patch_size=2, in_channels=16, out_channels=4, num_layers=1, attention_head_dim=8,
        num_attention_heads=2, joint_attention_dim=16, axes_dims_rope=(2, 2, 4))
    # Three downsamplings, as in the real VAE: a scale factor of 8, so sizes round to 16.
    vae = AutoencoderKLQwenImage(
        base_dim=8, z_dim=4, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
        temperal_downsample=[False, True, True], latents_mean=[0.0] * 4, latents_std=[1.0] * 4)
    return ready(QwenImageEditPlusPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=text_encoder,
        tokenizer=processor.tokenizer, processor=processor, transformer=transformer))


def tiny_flux_kontext() -> Any:
    from diffusers import (
        AutoencoderKL,
        FlowMatchEulerDiscreteScheduler,
        FluxKontextPipeline,
        FluxTransformer2DModel,
    )

    clip_tokenizer, t5_tokenizer = byte_clip_tokenizer(), char_t5_tokenizer()
    torch.manual_seed(0)
    clip = CLIPTextModel(CLIPTextConfig(
        vocab_size=len(clip_tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, projection_dim=16, max_position_embeddings=77,
        bos_token_id=0, eos_token_id=1, pad_token_id=1))
    t5 = T5EncoderModel(T5Config(vocab_size=len(t5_tokenizer), d_model=16, d_kv=8, d_ff=32,
                                 num_layers=1, num_heads=2, relative_attention_num_buckets=8))
    transformer = FluxTransformer2DModel(
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=16, pooled_projection_dim=16,
        guidance_embeds=True, axes_dims_rope=(4, 4, 8))
    vae = AutoencoderKL(
        block_out_channels=(4, 4, 4, 4), down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4, layers_per_block=1, latent_channels=4,
        norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False,
        shift_factor=0.0609, scaling_factor=1.5035)
    return ready(FluxKontextPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=clip,
        tokenizer=clip_tokenizer, text_encoder_2=t5, tokenizer_2=t5_tokenizer,
        transformer=transformer))


def tiny_flux2_klein() -> Any:
    from diffusers import (
        AutoencoderKLFlux2,
        FlowMatchEulerDiscreteScheduler,
        Flux2KleinPipeline,
        Flux2Transformer2DModel,
    )

    tokenizer = qwen_tokenizer(QWEN3_TEMPLATE)
    torch.manual_seed(0)
    # 27 layers: the pipeline stacks hidden states 9, 18 and 27, as from the real Qwen3-4B.
    text_encoder = Qwen3ForCausalLM(Qwen3Config(
        hidden_size=16, intermediate_size=32, num_hidden_layers=27, num_attention_heads=2,
        num_key_value_heads=1, head_dim=8, vocab_size=len(tokenizer),
        max_position_embeddings=1024))
    transformer = Flux2Transformer2DModel(
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=3 * 16, timestep_guidance_channels=256,
        axes_dims_rope=(4, 4, 4, 4), guidance_embeds=False)
    vae = AutoencoderKLFlux2(
        block_out_channels=(4, 4, 4, 4), layers_per_block=1, latent_channels=4,
        norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False)
    return ready(Flux2KleinPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=text_encoder,
        tokenizer=tokenizer, transformer=transformer, is_distilled=True))
