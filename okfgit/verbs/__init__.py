"""verbs"""
