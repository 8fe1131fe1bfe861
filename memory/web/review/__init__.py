"""What the user says about their memory: the memories under each answer (not relevant,
correct, delete) and the review inbox of what learning would keep."""
