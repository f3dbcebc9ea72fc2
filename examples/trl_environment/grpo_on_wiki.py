"""actune's wiki environment (search / lookup / finish over a local corpus) as a TRL environment: two GRPO steps of
TRL's own ``GRPOTrainer`` on it, on CPU, with a tiny random model and the embedded model's tokenizer (swap in your
model and more steps for a real run).

    python examples/trl_environment/grpo_on_wiki.py [MODEL_DIR [OUTPUT_DIR]]

``trl_environment`` gives TRL a class with a tool per action and ``get_reward`` (1.0 when the finish answer is right
by the task's metric); each example's ``question`` and ``answer`` columns start its episode. A model whose chat
template has no tools (SmolLM2) takes actune's ChatML-with-tools template and TRL's parser for the Hermes tool-call
form that template writes.
"""

import os
import sys

import torch
from datasets import Dataset
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen3_template

from actune.bridges.trl import trl_environment
from actune.envs.config import EnvConfig
from actune.runtime.chat_templates import CHATML_TOOLS_TEMPLATE
from actune.runtime.model_files import prepare_model

CORPUS = "tests/data/hotpotqa_small/wiki_paragraphs.jsonl"
QUESTION, ANSWER = "When did the 2002–03 La Liga season start?", "31 August 2002"


def main() -> None:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    model_dir = sys.argv[1] if len(sys.argv) > 1 else prepare_model("smollm2-135m")
    tok = AutoTokenizer.from_pretrained(model_dir)
    tok.chat_template = CHATML_TOOLS_TEMPLATE.read_text()
    tok.response_template = qwen3_template
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                         tie_word_embeddings=True))
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": QUESTION}], "question": QUESTION,
                             "answer": ANSWER}] * 4)
    out = sys.argv[2] if len(sys.argv) > 2 else "runs/grpo-on-wiki"
    args = GRPOConfig(output_dir=out, max_steps=2, per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=32, report_to="none", save_strategy="no", use_cpu=True,
                      max_tool_calling_iterations=2)
    env_class = trl_environment(EnvConfig(name="wiki", corpus=CORPUS))
    trainer = GRPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tok,
                          environment_factory=env_class)
    trainer.train()
    print(f"trained {trainer.state.global_step} GRPO steps on actune's wiki environment "
          f"(tools: {', '.join(t.__name__ for t in trainer.tools)})")


if __name__ == "__main__":
    main()
