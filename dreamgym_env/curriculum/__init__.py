"""Curriculum: task statistics, reward-variance selection, task generation."""
