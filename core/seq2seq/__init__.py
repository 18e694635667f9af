"""Lessons 2-3: the seq2seq bottleneck and Bahdanau attention, with toy models that really train."""

from .model import BahdanauAttention, Seq2Seq, Seq2SeqConfig
from .tasks import TASKS, get_task

__all__ = ["BahdanauAttention", "Seq2Seq", "Seq2SeqConfig", "TASKS", "get_task"]
