"""GLUE as it is distributed: its nine tasks' files read as they come (`tasks`), each task's
own dev metrics and the test predictions the GLUE server takes (`scoring`), and
`python -m bert_tf.finetune.glue`, every task of a GLUE directory in one table (`__main__`).

Importing this package loads no TensorFlow (the command line reads its flags first).
"""
