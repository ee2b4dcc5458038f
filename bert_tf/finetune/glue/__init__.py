"""GLUE as it is distributed: its nine tasks' layouts and scores (`tasks`), their files read as
they come (`reading`), each task's own dev metrics and the test predictions the GLUE server
takes (`scoring`), and `python -m bert_tf.finetune.glue`, every task of a GLUE directory in one
table (`table`, `__main__`).

Importing this package loads no TensorFlow (the command line reads its flags first).
"""
